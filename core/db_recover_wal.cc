// Recovery's replay of the WALs (DBImpl::ReplayLogs): which WALs it reads,
// what it applies, where it stops for a power cut's unsynced suffix, and
// what it refuses as damage (docs/durability.md, "Recovery: what is
// dropped as torn, what is refused").
#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/db_impl.h"
#include "core/write_batch_internal.h"
#include "io/status_macros.h"
#include "lsm/filename.h"
#include "lsm/log_format.h"
#include "lsm/log_reader.h"

namespace cairn {

using lsm::FileType;
using lsm::SequenceNumber;

namespace {

// Whether record, just read, is a sync record (format 4); if so, notes what
// it vouches for in *replay.
template <typename Replay>
bool NoteSyncRecord(const lsm::LogReader& reader, std::string_view record, Replay* replay) {
  WriteBatchInternal::SyncKind kind;
  uint64_t synced = 0;
  if (reader.format_version() < lsm::kSyncRecordLogFormatVersion ||
      !WriteBatchInternal::ParseSyncRecord(record, &kind, &synced)) {
    return false;
  }
  if (synced > replay->synced_through) {
    replay->synced_through = synced;
    replay->synced_offset = reader.last_record_offset();
  }
  if (kind == WriteBatchInternal::SyncKind::kOlderWalsWhole &&
      !replay->older_whole_offset.has_value()) {
    replay->older_whole_offset = reader.last_record_offset();
  }
  return true;
}

}  // namespace

absl::Status DBImpl::ReplayLogs(const std::vector<std::string>& names,
                                std::shared_ptr<lsm::MemTable>* mem_out,
                                SequenceNumber* max_sequence_out, lsm::VersionEdit* edit,
                                GarbageMeter* garbage) {
  // Replay every WAL the manifest does not cover, oldest first.
  std::vector<uint64_t> logs;
  for (const std::string& name : names) {
    uint64_t number;
    FileType type;
    if (!lsm::ParseFileName(name, &number, &type)) continue;
    versions_->MarkFileNumberUsed(number);
    if (type == FileType::kLog && number >= versions_->LogNumber()) logs.push_back(number);
  }
  std::sort(logs.begin(), logs.end());
  // Every write up to here was durable when the manifest was last written
  // (the manifest's last sequence only counts synced writes).
  const SequenceNumber durable_sequence = versions_->LastSequence();
  SequenceNumber max_sequence = durable_sequence;
  last_sequence_.store(max_sequence);
  auto mem = NewMemTable();
  LogReplay previous;  // the last WAL that held a write
  uint64_t previous_log = 0;
  LogReplay stop;  // the last WAL replayed
  uint64_t stop_log = 0;
  // The newest sync a sync record (format 4) vouches for, and where.
  SequenceNumber synced_through = 0;
  uint64_t synced_log = 0, synced_offset = 0;
  auto note_synced = [&](uint64_t log, const LogReplay& r) {
    if (r.synced_through <= synced_through) return;
    synced_through = r.synced_through;
    synced_log = log;
    synced_offset = r.synced_offset;
  };
  for (size_t i = 0; i < logs.size(); ++i) {
    LogReplay replay;
    absl::Status s = ReplayLog(logs[i], i + 1 == logs.size(), mem.get(), &max_sequence, &replay);
    if (s.ok()) s = CheckLogContinuity(previous_log, previous, logs[i], replay, durable_sequence);
    // A record the manifest lost (a segment it added, say) shows up here.
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat(s.message(), TornManifestNote()));
    if (replay.last_sequence != 0) {
      previous = replay;
      previous_log = logs[i];
    }
    note_synced(logs[i], replay);
    stop = replay;
    stop_log = logs[i];
    if (replay.unended) {
      // Every write after the cut, here and in the newer WALs, was never
      // synced: the suffix a power loss may take, unless a sync record
      // says a sync covered it. Such a record is written only once the
      // sync's writes are durable, so one that survives proves that this
      // WAL was cut or damaged after it was synced (issue 63): refuse.
      for (size_t j = i + 1; j < logs.size(); ++j) {
        LogReplay newer;
        CAIRN_RETURN_IF_ERROR(ScanSyncRecords(logs[j], &newer));
        if (newer.older_whole_offset.has_value()) {
          return absl::DataLossError(absl::StrCat(
              lsm::LogFileName(dbname_, logs[i]), ": ends at offset ", replay.cut_offset,
              " without its end record (", replay.cut_reason, "), but ",
              lsm::LogFileName(dbname_, logs[j]), " at offset ", *newer.older_whole_offset,
              " holds a sync record written once every older WAL was synced whole: this one "
              "was damaged or cut after its sync, and the synced writes after offset ",
              replay.cut_offset, " (here and in the newer WALs) are lost", TornManifestNote()));
        }
        note_synced(logs[j], newer);
      }
      if (info_log_ != nullptr) {
        info_log_->Log(
            "recovery: %s ends at offset %d without its end record (%s): a crash cut it before "
            "any sync covered it; the %d newer WALs hold only writes that were never synced and "
            "are not replayed",
            lsm::LogFileName(dbname_, logs[i]), replay.cut_offset, replay.cut_reason,
            logs.size() - i - 1);
      }
      break;
    }
    if (edit != nullptr && mem->ApproximateMemoryUsage() >= options_.memtable_size) {
      CAIRN_RETURN_IF_ERROR(
          WriteLevel0Table(mem.get(), edit, garbage, nullptr, garbage->mutable_edit(),
                           /*at_open=*/true));
      mem = NewMemTable();
    }
  }
  if (previous.last_sequence != 0 && previous.last_sequence < durable_sequence) {
    // The WALs replayed hold the newest writes; the manifest says writes up
    // to durable_sequence were synced, so a crash cannot have taken them.
    const std::string path = lsm::LogFileName(dbname_, previous_log);
    return absl::DataLossError(absl::StrCat(
        path, ": replay ends at sequence ", previous.last_sequence,
        previous.cut_short ? absl::StrCat(" (", previous.cut_reason, " at offset ",
                                          previous.cut_offset, ")")
                           : std::string(" (at the end of the file)"),
        ", but ", lsm::ManifestFileName(dbname_, versions_->ManifestFileNumber()),
        " records writes up to sequence ", durable_sequence,
        " as synced: acknowledged writes are missing", TornManifestNote()));
  }
  if (synced_through > max_sequence) {
    // A sync record says writes through synced_through were durable before
    // it was written; replay stopped short of them, in a WAL older than the
    // record's, so that WAL lost synced writes to damage, not a power cut.
    return absl::DataLossError(absl::StrCat(
        lsm::LogFileName(dbname_, stop_log), ": replay ends at sequence ", max_sequence,
        stop.cut_short ? absl::StrCat(" (", stop.cut_reason, " at offset ", stop.cut_offset, ")")
                       : std::string(" (at the end of the file)"),
        ", but ", lsm::LogFileName(dbname_, synced_log), " at offset ", synced_offset,
        " holds a sync record saying writes through sequence ", synced_through,
        " were synced: acknowledged writes are missing", TornManifestNote()));
  }
  if (absl::Status s = CheckCollectedPointersSuperseded(); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(s.message(), TornManifestNote()));
  }
  *mem_out = std::move(mem);
  *max_sequence_out = max_sequence;
  return absl::OkStatus();
}

absl::Status DBImpl::ScanSyncRecords(uint64_t log_number, LogReplay* replay) const {
  CAIRN_ASSIGN_OR_RETURN(
      std::unique_ptr<lsm::LogReader> reader,
      lsm::LogReader::Open(fs_.get(), lsm::LogFileName(dbname_, log_number), log_number));
  std::string_view record;
  std::string scratch;
  while (reader->ReadRecord(&record, &scratch)) NoteSyncRecord(*reader, record, replay);
  // Damage a crash cannot leave (whole records after a bad one) is refused
  // here too: it may hide a sync record.
  return reader->status();
}

absl::Status DBImpl::CheckLogContinuity(uint64_t previous_log, const LogReplay& previous,
                                        uint64_t log, const LogReplay& replay,
                                        SequenceNumber durable_sequence) const {
  if (replay.first_sequence == 0) return absl::OkStatus();
  // Sequence numbers run on without a gap from one WAL to the next, and the
  // first WAL replayed starts right after the writes the tables hold.
  if (previous.last_sequence != 0 && replay.first_sequence != previous.last_sequence + 1) {
    return absl::DataLossError(absl::StrCat(
        lsm::LogFileName(dbname_, log), ": its first write has sequence ", replay.first_sequence,
        " but ", lsm::LogFileName(dbname_, previous_log), " ends at sequence ",
        previous.last_sequence, ": a WAL between them is missing or cut"));
  }
  if (previous.last_sequence == 0 && replay.first_sequence > durable_sequence + 1) {
    return absl::DataLossError(absl::StrCat(
        lsm::LogFileName(dbname_, log), ": its first write has sequence ", replay.first_sequence,
        " but the manifest's state ends at sequence ", durable_sequence,
        ": an older WAL is missing"));
  }
  return absl::OkStatus();
}

absl::Status DBImpl::ReplayLog(uint64_t log_number, bool is_last_log, lsm::MemTable* mem,
                               SequenceNumber* max_sequence, LogReplay* replay) {
  const std::string path = lsm::LogFileName(dbname_, log_number);
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<lsm::LogReader> reader,
                         lsm::LogReader::Open(fs_.get(), path, log_number));
  std::string_view record;
  std::string scratch;
  WriteBatch batch;
  bool ended = false;  // the last record read is an end record
  while (reader->ReadRecord(&record, &scratch)) {
    if (NoteSyncRecord(*reader, record, replay)) {
      ended = false;
      continue;
    }
    if (reader->format_version() >= lsm::kIngestionEventLogFormatVersion &&
        WriteBatchInternal::IsIngestionEvent(record)) {
      // An ingestion's event (format 7) takes its sequence number; the
      // files themselves are in the manifest's edit, not here.
      uint64_t sequence = 0;
      std::vector<std::string> files;
      absl::Status s = WriteBatchInternal::ParseIngestionEvent(record, &sequence, &files);
      if (!s.ok()) {
        return absl::DataLossError(absl::StrCat(path, " at offset ", reader->last_record_offset(),
                                                ": ", s.message()));
      }
      if (replay->first_sequence == 0) replay->first_sequence = sequence;
      replay->last_sequence = sequence;
      *max_sequence = std::max(*max_sequence, sequence);
      last_sequence_.store(*max_sequence);
      ended = false;
      continue;
    }
    absl::Status s = WriteBatchInternal::SetContents(&batch, record);
    // A batch is applied only when every value it points to is intact. The
    // WAL record may have reached the disk without its values (a power loss
    // before a sync), which ends what was durable; ExplainBrokenPointer
    // tells that apart from damage.
    std::optional<std::string> broken;
    if (s.ok()) {
      s = WriteBatchInternal::ForEach(batch, [&](SequenceNumber seq, lsm::ValueType type,
                                                 std::string_view key, std::string_view stored) {
        if (broken.has_value()) return absl::OkStatus();
        // An expiring entry's pointer is checked as any other (ForEach
        // checked its expiry), and the DB learns it may hold one.
        lsm::StoredValue sv;
        lsm::SplitStoredValue(type, stored, &sv);
        if (lsm::HasExpiry(type)) expiring_entries_seen_.store(true, std::memory_order_relaxed);
        type = sv.type;
        const std::string_view value = sv.payload;
        if (NoteCollectedPointer(log_number, seq, type, key, value)) return absl::OkStatus();
        if (type != lsm::ValueType::kValuePointer) return absl::OkStatus();
        CAIRN_ASSIGN_OR_RETURN(bool intact, vlog_->PointerIsIntact(key, value));
        if (!intact) broken = std::string(value);
        return absl::OkStatus();
      });
    }
    if (s.ok() && broken.has_value()) {
      const std::string depends = absl::StrCat(
          "; ", path, " at offset ", reader->last_record_offset(), " points to it (the write at sequence ",
          WriteBatchInternal::Sequence(batch), ")");
      absl::Status why = vlog_->ExplainBrokenPointer(*broken);
      if (!why.ok()) return absl::Status(why.code(), absl::StrCat(why.message(), depends));
      if (!is_last_log) {
        return absl::DataLossError(absl::StrCat(
            "a value in the unsynced tail of the active value-log segment", depends,
            ", which is not the newest WAL: it was synced before the next WAL began"));
      }
      replay->cut_short = true;
      replay->cut_offset = reader->last_record_offset();
      // Named, so that a refusal for lost synced writes names the segment.
      absl::StatusOr<vlog::ValuePointer> ptr = vlog::DecodeValuePointer(*broken);
      replay->cut_reason =
          ptr.ok() ? absl::StrCat("its value in ", lsm::ValueLogFileName(dbname_, ptr->segment_id),
                                  " at offset ", ptr->offset, " was never written whole")
                   : "a value it points to was never written whole";
      break;
    }
    if (s.ok()) s = InsertInto(mem, batch);
    if (!s.ok()) {
      // The record's checksum held, so these bytes were written this way:
      // corruption, not a torn write.
      return absl::DataLossError(absl::StrCat(path, " at offset ", reader->last_record_offset(),
                                              ": ", s.message()));
    }
    // An empty batch is the end record of a WAL a newer one replaced
    // (format 2); it is the last record of its WAL.
    ended = reader->format_version() >= 2 && WriteBatchInternal::IsEndRecord(record);
    if (batch.Count() > 0) {
      const SequenceNumber first = WriteBatchInternal::Sequence(batch);
      if (replay->first_sequence == 0) replay->first_sequence = first;
      replay->last_sequence = first + batch.Count() - 1;
      *max_sequence = std::max(*max_sequence, replay->last_sequence);
      // A flush during replay drops versions relative to this.
      last_sequence_.store(*max_sequence);
    }
  }
  CAIRN_RETURN_IF_ERROR(reader->status());
  if (is_last_log && ended) {
    // A switch writes the end record only after the newer WAL and its
    // directory entry are synced, and a WAL is deleted only once the
    // manifest no longer needs it, after the older ones: the newer WAL was
    // removed or lost, and the writes it held with it.
    return absl::DataLossError(absl::StrCat(
        path, " ends in its end record, which is written only once a newer WAL exists, but no "
        "newer WAL is in the directory: it is missing, and the writes after sequence ",
        replay->last_sequence, " with it"));
  }
  const bool closed_unsynced = !is_last_log && reader->format_version() >= 2;
  if (closed_unsynced && !ended) {
    // Format 2 closes a WAL with an end record, unsynced, and syncs it only
    // when a sync of a newer one comes: without its end record (cut short,
    // or torn), no sync ever covered it, and none covered a newer one.
    replay->unended = true;
    if (!replay->cut_short) {
      replay->cut_short = true;
      replay->cut_offset = reader->valid_end_offset();
      replay->cut_reason = reader->hit_torn_tail() ? "a damaged or cut record"
                                                   : "its end, without the end record";
    }
    return absl::OkStatus();
  }
  if (reader->hit_torn_tail()) {
    if (!is_last_log) {
      // A WAL that is not the newest was synced (format 1) or ends in its
      // end record (format 2), which nothing follows: a bad record after
      // it is damage, not a torn write.
      return absl::DataLossError(absl::StrCat(path, ": torn record at offset ",
                                              reader->valid_end_offset(),
                                              " in a WAL that is not the newest"));
    }
    if (!replay->cut_short) {
      replay->cut_short = true;
      replay->cut_offset = reader->valid_end_offset();
      replay->cut_reason = "a damaged or cut record";
    }
  }
  return absl::OkStatus();
}

bool DBImpl::NoteCollectedPointer(uint64_t log_number, SequenceNumber seq, lsm::ValueType type,
                                  std::string_view key, std::string_view value) {
  std::optional<uint64_t> collected;
  if (type == lsm::ValueType::kValuePointer) {
    absl::StatusOr<vlog::ValuePointer> ptr = vlog::DecodeValuePointer(value);
    if (ptr.ok() && vlog_->IsCollected(ptr->segment_id)) collected = ptr->segment_id;
  }
  if (collected.has_value()) {
    replay_collected_[std::string(key)] = CollectedPointer{*collected, log_number, seq};
    return true;
  }
  if (replay_collected_.empty()) return false;
  if (type == lsm::ValueType::kRangeDeletion) {
    // A later range deletion supersedes the old pointers of its keys: GC
    // then has nothing of theirs to move.
    for (auto it = replay_collected_.begin(); it != replay_collected_.end();) {
      if (it->first >= key && it->first < value) {
        replay_collected_.erase(it++);
      } else {
        ++it;
      }
    }
    return false;
  }
  // A later write to the key supersedes the old pointer.
  replay_collected_.erase(std::string(key));
  return false;
}

absl::Status DBImpl::CheckCollectedPointersSuperseded() {
  // Every write up to the one GC's rewrite synced is replayed (the victim
  // was deleted only then), so an old pointer into the victim is always
  // followed by its successor. One that is not means acknowledged writes
  // are missing: refuse, naming the files, rather than lose the key.
  if (replay_collected_.empty()) return absl::OkStatus();
  const auto& [key, p] = *replay_collected_.begin();
  const absl::Status s = absl::DataLossError(absl::StrCat(
      lsm::LogFileName(dbname_, p.log_number), ": the newest write to key '",
      absl::CHexEscape(key), "' (sequence ", p.sequence, ") points into ",
      lsm::ValueLogFileName(dbname_, p.segment_id),
      ", which garbage collection removed after moving its records; the write that moved it is "
      "missing (", replay_collected_.size(), " keys in all)"));
  replay_collected_.clear();
  return s;
}

}  // namespace cairn

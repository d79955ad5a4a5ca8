// The change feed (DB::GetUpdatesSince) and the WAL retention it reads
// from (Options::wal_ttl_seconds, wal_size_limit_bytes); the ingestion
// event's write (DBImpl::LogIngestionEvent). docs/replication.md says what
// the feed gives; docs/decisions/20261208_change_feed.md why it is built
// this way.
//
// The feed reads the WALs themselves: every write reaches one before it is
// acknowledged, in sequence order, and a WAL whose writes the tables hold
// is kept (in place, below the manifest's log number, which recovery never
// replays) while retention says so. A WAL record that names a value by a
// pointer is resolved through the value log; the segments such pointers
// name stay while the WAL does (core/retention.h, the WAL floor).
#include <algorithm>
#include <chrono>
#include <limits>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/db_impl.h"
#include "core/write_batch_internal.h"
#include "io/coding.h"
#include "io/status_macros.h"
#include "lsm/filename.h"
#include "lsm/log_format.h"
#include "lsm/log_reader.h"

namespace cairn {

using lsm::FileType;
using lsm::SequenceNumber;

int64_t DBImpl::WalClockSeconds() const {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::steady_clock::now().time_since_epoch())
             .count() +
         wal_clock_shift_for_testing.load(std::memory_order_relaxed);
}

std::vector<uint64_t> DBImpl::TakeDeletableWals(const std::vector<uint64_t>& obsolete) {
  std::vector<uint64_t> sorted = obsolete;
  std::sort(sorted.begin(), sorted.end());
  // Sizes are read before the lock (a stat each, for WALs not seen yet).
  std::map<uint64_t, uint64_t> sizes;
  if (WalRetentionOn()) {
    absl::MutexLock l(&mu_);
    for (uint64_t n : sorted) {
      if (!retained_wals_.contains(n)) sizes[n] = 0;
    }
  }
  for (auto& [n, size] : sizes) {
    absl::StatusOr<uint64_t> s = fs_->GetFileSize(lsm::LogFileName(dbname_, n));
    size = s.ok() ? *s : 0;
  }
  const int64_t now = WalClockSeconds();
  absl::MutexLock l(&mu_);
  const uint64_t min_pin =
      feed_pins_.empty() ? std::numeric_limits<uint64_t>::max() : *feed_pins_.begin();
  std::vector<uint64_t> gone;
  if (!WalRetentionOn()) {
    // Without retention only a feed iterator's pin keeps one.
    for (uint64_t n : sorted) {
      if (n < min_pin) gone.push_back(n);
    }
  } else {
    // The WALs kept are exactly the obsolete ones on disk now.
    std::erase_if(retained_wals_, [&](const auto& e) {
      return !std::binary_search(sorted.begin(), sorted.end(), e.first);
    });
    for (const auto& [n, size] : sizes) {
      retained_wals_.emplace(n, RetainedWal{.bytes = size, .obsolete_since = now});
    }
    uint64_t total = 0;
    for (const auto& [n, w] : retained_wals_) total += w.bytes;
    // Oldest first, and never one after a WAL that stays: the feed reads
    // them without a gap.
    for (auto it = retained_wals_.begin(); it != retained_wals_.end();) {
      const bool expired =
          options_.wal_ttl_seconds > 0 &&
          now - it->second.obsolete_since >= static_cast<int64_t>(options_.wal_ttl_seconds);
      const bool over = options_.wal_size_limit_bytes > 0 && total > options_.wal_size_limit_bytes;
      if (!(expired || over) || it->first >= min_pin) break;
      total -= it->second.bytes;
      gone.push_back(it->first);
      it = retained_wals_.erase(it);
    }
  }
  for (uint64_t n : gone) wal_first_sequence_.erase(n);
  UpdateWalFloorLocked();
  return gone;
}

void DBImpl::UpdateWalFloorLocked() {
  uint64_t oldest = std::numeric_limits<uint64_t>::max();
  if (!retained_wals_.empty()) oldest = retained_wals_.begin()->first;
  if (!feed_pins_.empty()) oldest = std::min(oldest, *feed_pins_.begin());
  SequenceNumber floor = std::numeric_limits<SequenceNumber>::max();
  if (oldest != std::numeric_limits<uint64_t>::max()) {
    // An unknown start (a WAL kept from before the open) holds everything.
    auto it = wal_first_sequence_.find(oldest);
    floor = it == wal_first_sequence_.end() ? 0 : it->second;
  }
  gc_.retention().SetWalFloor(floor);
}

void DBImpl::PinFeedLog(uint64_t log_number) {
  absl::MutexLock l(&mu_);
  feed_pins_.insert(log_number);
  UpdateWalFloorLocked();
}

void DBImpl::UnpinFeedLog(uint64_t log_number) {
  absl::MutexLock l(&mu_);
  auto it = feed_pins_.find(log_number);
  if (it != feed_pins_.end()) feed_pins_.erase(it);
  UpdateWalFloorLocked();
}

absl::StatusOr<std::optional<SequenceNumber>> DBImpl::WalFirstSequence(uint64_t log_number) {
  {
    absl::MutexLock l(&mu_);
    auto it = wal_first_sequence_.find(log_number);
    if (it != wal_first_sequence_.end()) return it->second;
  }
  CAIRN_ASSIGN_OR_RETURN(
      std::unique_ptr<lsm::LogReader> reader,
      lsm::LogReader::Open(fs_.get(), lsm::LogFileName(dbname_, log_number), log_number));
  std::string_view record;
  std::string scratch;
  while (reader->ReadRecord(&record, &scratch)) {
    if (record.size() < kBatchHeaderSize) break;
    const bool event = reader->format_version() >= lsm::kIngestionEventLogFormatVersion &&
                       WriteBatchInternal::IsIngestionEvent(record);
    if (!event && io::DecodeFixed32(record.data() + 8) == 0) continue;  // end or sync record
    const SequenceNumber first = io::DecodeFixed64(record.data());
    absl::MutexLock l(&mu_);
    wal_first_sequence_[log_number] = first;
    UpdateWalFloorLocked();
    return first;
  }
  CAIRN_RETURN_IF_ERROR(reader->status());
  return std::nullopt;
}

absl::Status DBImpl::RecordToUpdate(std::string_view record, uint32_t format_version,
                                    const UpdatesOptions& options, Update* out, bool* is_item) {
  *is_item = false;
  if (format_version >= lsm::kIngestionEventLogFormatVersion &&
      WriteBatchInternal::IsIngestionEvent(record)) {
    out->kind = Update::Kind::kIngestion;
    out->batch.Clear();
    CAIRN_RETURN_IF_ERROR(
        WriteBatchInternal::ParseIngestionEvent(record, &out->sequence, &out->ingested_files));
    *is_item = true;
    return absl::OkStatus();
  }
  // End records (format 2) and sync records (format 4) hold no write.
  if (record.size() >= kBatchHeaderSize && io::DecodeFixed32(record.data() + 8) == 0) {
    return absl::OkStatus();
  }
  WriteBatch batch;
  CAIRN_RETURN_IF_ERROR(WriteBatchInternal::SetContents(&batch, record));
  out->kind = Update::Kind::kWriteBatch;
  out->sequence = WriteBatchInternal::Sequence(batch);
  out->ingested_files.clear();
  out->batch.Clear();
  std::string value;
  CAIRN_RETURN_IF_ERROR(WriteBatchInternal::ForEach(
      batch,
      [&](SequenceNumber seq, lsm::ValueType type, std::string_view key,
          std::string_view stored) -> absl::Status {
        if (lsm::WithoutExpiry(type) != lsm::ValueType::kValuePointer) {
          WriteBatchInternal::AddEntry(&out->batch, type, key, stored);
          return absl::OkStatus();
        }
        // An expiring pointer (WAL format 6; ForEach checked its expiry)
        // becomes an expiring inline value with the same expiry.
        lsm::StoredValue sv;
        lsm::SplitStoredValue(type, stored, &sv);
        absl::Status s = vlog_->Get(key, sv.payload, &value, options.fill_cache);
        if (!s.ok()) {
          return absl::Status(
              s.code(), absl::StrCat("the value of key '",
                                     absl::CHexEscape(absl::string_view(key.data(), key.size())),
                                     "' (sequence ", seq, "): ", s.message()));
        }
        if (sv.expiry_micros != 0) {
          std::string expiring;
          lsm::AppendExpiringValue(&expiring, sv.expiry_micros, value);
          WriteBatchInternal::AddEntry(&out->batch, lsm::ValueType::kValueWithExpiry, key,
                                       expiring);
        } else {
          WriteBatchInternal::AddEntry(&out->batch, lsm::ValueType::kValue, key, value);
        }
        return absl::OkStatus();
      }));
  WriteBatchInternal::SetCount(&out->batch, batch.Count());
  WriteBatchInternal::SetSequence(&out->batch, out->sequence);
  *is_item = true;
  return absl::OkStatus();
}

// Reads the WALs from the one holding `since` to the newest that existed
// at its creation, up to the sequence that was the latest then. It pins
// its lowest WAL, so that neither retention nor a flush deletes what it
// has still to read.
class FeedIterator final : public UpdateIterator {
 public:
  FeedIterator(DBImpl* db, UpdatesOptions options, SequenceNumber since, SequenceNumber limit,
               std::vector<uint64_t> logs, uint64_t pinned)
      : db_(db),
        options_(options),
        since_(since),
        limit_(limit),
        logs_(std::move(logs)),
        pinned_(pinned) {
    Next();
  }
  ~FeedIterator() override { db_->UnpinFeedLog(pinned_); }

  bool Valid() const override { return valid_; }
  const Update& update() const override { return update_; }
  absl::Status status() const override { return status_; }

  void Next() override {
    valid_ = false;
    if (!status_.ok() || done_) return;
    while (true) {
      if (reader_ == nullptr) {
        if (next_log_ >= logs_.size()) {
          if (expected_ <= limit_) {
            status_ = absl::DataLossError(absl::StrCat(
                "the change feed ends at sequence ", expected_ - 1, " but writes through ", limit_,
                " were acknowledged: a WAL holding them is missing"));
          }
          done_ = true;
          return;
        }
        const uint64_t log = logs_[next_log_++];
        current_path_ = lsm::LogFileName(db_->dbname_, log);
        absl::StatusOr<std::unique_ptr<lsm::LogReader>> r =
            lsm::LogReader::Open(db_->fs_.get(), current_path_, log);
        if (!r.ok()) {
          status_ = absl::IsNotFound(r.status())
                        ? absl::OutOfRangeError(absl::StrCat(
                              current_path_,
                              " went away before the change feed read it: ", r.status().message()))
                        : r.status();
          return;
        }
        reader_ = *std::move(r);
      }
      std::string_view record;
      if (!reader_->ReadRecord(&record, &scratch_)) {
        // A live WAL may end in a record being written: past the limit,
        // what follows is not this iterator's.
        if (!reader_->status().ok() && expected_ <= limit_) {
          status_ = reader_->status();
          return;
        }
        reader_.reset();
        continue;
      }
      bool is_item = false;
      absl::Status s =
          db_->RecordToUpdate(record, reader_->format_version(), options_, &update_, &is_item);
      if (!s.ok()) {
        status_ =
            absl::Status(s.code(), absl::StrCat(current_path_, " at offset ",
                                                reader_->last_record_offset(), ": ", s.message()));
        return;
      }
      if (!is_item) continue;
      if (update_.last_sequence() < since_) continue;
      if (update_.sequence > limit_) {
        done_ = true;
        return;
      }
      if (expected_ != 0 && update_.sequence != expected_) {
        status_ = absl::DataLossError(absl::StrCat(
            current_path_, " at offset ", reader_->last_record_offset(), ": the write at sequence ",
            update_.sequence, " follows the one ending at ", expected_ - 1,
            ": the change feed would have a gap or a repeat"));
        return;
      }
      expected_ = update_.last_sequence() + 1;
      valid_ = true;
      if (update_.last_sequence() >= limit_) done_ = true;
      return;
    }
  }

 private:
  DBImpl* const db_;
  const UpdatesOptions options_;
  const SequenceNumber since_, limit_;
  const std::vector<uint64_t> logs_;
  const uint64_t pinned_;
  size_t next_log_ = 0;
  std::unique_ptr<lsm::LogReader> reader_;
  std::string current_path_;
  std::string scratch_;
  Update update_;
  SequenceNumber expected_ = 0;  // the next item's sequence, once one was returned
  bool valid_ = false, done_ = false;
  absl::Status status_;
};

namespace {

// An iterator with nothing to return (since is the next sequence).
class EmptyFeed final : public UpdateIterator {
 public:
  bool Valid() const override { return false; }
  const Update& update() const override { return update_; }
  void Next() override {}
  absl::Status status() const override { return absl::OkStatus(); }

 private:
  Update update_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<UpdateIterator>> DBImpl::GetUpdatesSince(
    uint64_t since, const UpdatesOptions& options) {
  CAIRN_RETURN_IF_ERROR(CheckWritable("GetUpdatesSince"));
  since = std::max<uint64_t>(since, 1);
  // Every write through limit is in a WAL that exists before the listing.
  const SequenceNumber limit = last_sequence_.load(std::memory_order_acquire);
  if (since > limit + 1) {
    return absl::InvalidArgumentError(absl::StrCat("GetUpdatesSince(", since,
                                                   "): beyond the latest sequence number, ", limit,
                                                   " (the next write gets ", limit + 1, ")"));
  }
  if (since == limit + 1) return std::unique_ptr<UpdateIterator>(std::make_unique<EmptyFeed>());
  // Pin every WAL while the start is looked for, then only from the start.
  PinFeedLog(0);
  absl::Cleanup unpin_all = [this] { UnpinFeedLog(0); };
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> names, fs_->ListDir(dbname_));
  std::vector<uint64_t> logs;
  for (const std::string& name : names) {
    uint64_t number;
    FileType type;
    if (lsm::ParseFileName(name, &number, &type) && type == FileType::kLog) logs.push_back(number);
  }
  std::sort(logs.begin(), logs.end());
  // The newest WAL whose first sequence is at or below since; the oldest
  // one that holds any write names the oldest sequence retained.
  std::optional<size_t> start;
  SequenceNumber oldest = limit + 1;
  for (size_t i = logs.size(); i-- > 0;) {
    absl::StatusOr<std::optional<SequenceNumber>> first = WalFirstSequence(logs[i]);
    if (!first.ok()) {
      if (absl::IsNotFound(first.status())) break;  // went away: older ones did too
      return first.status();
    }
    if (!first->has_value()) continue;
    oldest = **first;
    if (oldest <= since) {
      start = i;
      break;
    }
  }
  if (!start.has_value()) {
    return absl::OutOfRangeError(
        absl::StrCat("GetUpdatesSince(", since, "): sequence ", since,
                     " is no longer retained; the oldest sequence the WALs hold is ", oldest,
                     " (Options::wal_ttl_seconds and wal_size_limit_bytes keep more)"));
  }
  logs.erase(logs.begin(), logs.begin() + static_cast<ptrdiff_t>(*start));
  PinFeedLog(logs.front());
  return std::unique_ptr<UpdateIterator>(
      std::make_unique<FeedIterator>(this, options, since, limit, std::move(logs), logs.front()));
}

absl::Status DBImpl::WriteIngestionEvent(IngestionEventWrite* ingestion) {
  const SequenceNumber sequence = last_sequence_.load() + 1;
  // As a synced group: the closed WALs first, so that no synced record
  // follows an unsynced one (docs/durability.md, "WAL switches").
  std::vector<std::shared_ptr<lsm::LogWriter>> closed_logs = UnsyncedClosedLogs();
  const SequenceNumber closed_through =
      closed_logs.empty() ? 0 : std::max(wal_synced_sequence_, imm_.back().last_sequence);
  lsm::LogWriter* log = log_.get();
  absl::Status status;
  mu_.Unlock();
  for (const std::shared_ptr<lsm::LogWriter>& closed : closed_logs) {
    if (status.ok()) status = closed->Sync();
  }
  if (status.ok() && !closed_logs.empty()) {
    status = log->AddRecord(WriteBatchInternal::SyncRecord(
        WriteBatchInternal::SyncKind::kOlderWalsWhole, closed_through));
  }
  // The values earlier records point to are durable with the event.
  if (status.ok()) status = vlog_->Sync();
  if (status.ok()) {
    status = log->AddRecord(WriteBatchInternal::IngestionEventRecord(sequence, *ingestion->files));
  }
  if (status.ok()) status = log->Sync();
  if (status.ok()) status = (*ingestion->install)(sequence);
  mu_.Lock();
  if (!status.ok()) {
    // The WAL may hold an event the database does not: stop writes.
    SetBackgroundError(status);
    return status;
  }
  ingestion->sequence = sequence;
  last_sequence_.store(sequence, std::memory_order_release);
  versions_->SetLastSequence(sequence);
  wal_synced_sequence_ = sequence;
  wal_names_unsynced_values_ = false;
  MarkLogsSynced(closed_logs);
  return absl::OkStatus();
}

}  // namespace cairn

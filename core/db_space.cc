// The engine's side of the space ledger (core/space_ledger.h): the figures
// it reads, and the value log's on-disk space amplification Stats reports.
#include <algorithm>
#include <memory>

#include "core/db_impl.h"

namespace cairn {

double DBImpl::ValueLogSpaceAmplification() const {
  const vlog::ValueLog::Totals t = vlog_->GetTotals();
  // Punched bytes are garbage that takes no space any more.
  const uint64_t bytes = t.bytes - std::min(t.bytes, t.punched_bytes);
  const uint64_t garbage = t.garbage_bytes - std::min(t.garbage_bytes, t.punched_bytes);
  if (bytes == 0) return 0;
  const uint64_t live = bytes > garbage ? bytes - garbage : 1;
  return static_cast<double>(bytes) / live;
}

DBImpl::ValueLogSpace DBImpl::GetValueLogSpace(bool with_estimate) {
  absl::MutexLock l(&mu_);
  return ledger_.Space(with_estimate);
}

SpaceLedger::Figures DBImpl::SpaceFiguresLocked() {
  SpaceLedger::Figures f;
  f.set = vlog_->segment_set().GetTotals();
  f.active_bytes = vlog_->ActiveBytes();
  const PendingVictims pending = gc_.PendingVictimTotalsLocked();
  f.pending_victim_bytes = pending.bytes;
  f.pending_victim_garbage = pending.garbage;
  f.foreseen_bytes = gc_.foreseen().total_bytes();
  for (const ImmutableMemTable& imm : imm_) {
    f.imm_flush_value_bytes += imm.flush_value_bytes;
    f.imm_value_bytes += imm.value_bytes;
    f.imm_deleted_bytes += imm.deleted_bytes;
  }
  return f;
}

SpaceLedger::Settings DBImpl::LedgerSettings(const Options& options) {
  return {.gc_space_amp_trigger = options.gc_space_amp_trigger,
          .memtable_size = options.memtable_size,
          .max_memtable_value_bytes = options.max_memtable_value_bytes};
}

SpaceLedger::Sources DBImpl::LedgerSources() {
  // Called under mu_ by the ledger's questions (the ledger asks nothing
  // before the DB is open).
  return {.figures = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return SpaceFiguresLocked(); },
          .current_version = [this] { return versions_->current(); },
          .average_record =
              [this] {
                uint64_t bytes = 0, records = 0;
                for (const vlog::SegmentInfo& s : vlog_->segment_set().Segments()) {
                  bytes += s.size;
                  records += s.records;
                }
                return records == 0 ? uint64_t{1} : std::max<uint64_t>(1, bytes / records);
              }};
}

bool DBImpl::HiddenGarbageMayPass(double mark) {
  return gc_.ControllerLocked().enabled() && ledger_.HiddenGarbageMayPass(mark);
}

}  // namespace cairn

// Plain records DBImpl keeps about its value log and its compactions: the
// space figure GC steers by, what L0 may hide, the punches and victims that
// wait for readers or durability, per-level compaction counts, and replay's
// pointers into collected segments. They hold no lock and no logic beyond
// ValueLogSpace::amplification; DBImpl names each under its own name.
#ifndef CAIRN_CORE_DB_RECORDS_H_
#define CAIRN_CORE_DB_RECORDS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "lsm/dbformat.h"
#include "vlog/segment_edit.h"

namespace cairn::db_records {

// What GC steers by: the segments GC can still act on (obsolete ones are
// already collected and only wait for readers to go).
struct ValueLogSpace {
  // bytes: segments not obsolete (the active one included), values
  // memtables hold for their flushes, running GC jobs' copies not in the
  // set yet; garbage: of those, counted, foreseen, or GC's copies.
  uint64_t bytes = 0, garbage = 0;
  uint64_t uncounted = 0;  // estimated garbage not counted yet
  // bytes over the live bytes left once garbage and uncounted are taken.
  double amplification() const;
};

// What L0 tables may hide below them: the value-log bytes their pointers
// name plus their deletions' estimate (value_bytes), and of it the
// deletions' share (deleted_bytes), which counts as garbage at full
// weight where the pointers' share counts at the yield.
struct Level0Hidden {
  uint64_t value_bytes = 0;
  uint64_t deleted_bytes = 0;
};

// Replay only: where the newest replayed write of a key pointed into a
// collected segment.
struct CollectedPointer {
  uint64_t segment_id;
  uint64_t log_number;
  lsm::SequenceNumber sequence;
};

// Per output level: bytes compactions read from the level above and from
// the level itself, bytes written, and the number of compactions.
struct LevelCompactionStats {
  uint64_t bytes_read_upper = 0, bytes_read_lower = 0, bytes_written = 0, compactions = 0;
  uint64_t trivial_moves = 0, micros = 0;
};

// Runs of dead records of one segment, planned after a flush or compaction
// counted them, waiting until no reader of the read epoch current then
// remains (docs/gc.md, "Punched runs").
struct PendingPunch {
  uint64_t segment_id = 0;
  std::vector<vlog::PunchRun> runs;
  std::weak_ptr<const void> epoch;
};

// Victims of background jobs whose records all moved or died, waiting
// until the writes that moved or superseded them are durable (sequence
// durable_at) before the manifest marks them obsolete (docs/gc.md,
// "Victims wait for durability").
struct PendingVictims {
  std::vector<uint64_t> ids;
  lsm::SequenceNumber durable_at = 0;
  uint64_t bytes = 0;    // their size on disk
  uint64_t garbage = 0;  // of which the manifest counted as garbage
};

}  // namespace cairn::db_records

#endif  // CAIRN_CORE_DB_RECORDS_H_

// EventListener: callbacks for what the database does in the background,
// each with its figures. Set through Options::listeners; the same events go
// to the info LOG file in the database directory.
//
// Thread safety: callbacks run on the thread that did the work (a
// background thread, or a writer for stalls), possibly several at once.
// OnStallConditionsChanged and OnBackgroundError run with the database's
// mutex held, and no callback may call back into the DB that called it:
// record what you need and return quickly.
#ifndef CAIRN_LISTENER_H_
#define CAIRN_LISTENER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "cairn/stats.h"

namespace cairn {

// One memtable written to a level-0 table.
struct FlushJobInfo {
  uint64_t file_number = 0;
  uint64_t file_bytes = 0;
  uint64_t value_log_bytes = 0;  // separated value bytes its pointers name
  uint64_t micros = 0;
};

// One compaction (or a trivial move: a file moved down a level unread).
struct CompactionJobInfo {
  int level = 0;
  int output_level = 0;
  bool trivial_move = false;
  uint64_t input_files = 0, input_bytes = 0;
  uint64_t output_files = 0, output_bytes = 0;
  uint64_t micros = 0;
};

enum class StallCondition : uint8_t {
  kNormal = 0,   // writes run freely
  kDelayed = 1,  // writes are slowed (level-0 files, pending compaction, value-log space)
  kStopped = 2,  // writes wait for a flush or compaction
};

struct StallConditionInfo {
  StallCondition previous = StallCondition::kNormal;
  StallCondition current = StallCondition::kNormal;
  std::string cause;  // what the current condition waits for; empty when normal
};

class EventListener {
 public:
  virtual ~EventListener() = default;
  virtual void OnFlushCompleted(const FlushJobInfo& info) {}
  virtual void OnCompactionCompleted(const CompactionJobInfo& info) {}
  // One GC pass that collected at least one segment (background or RunGC).
  virtual void OnGcCompleted(const GcResult& result) {}
  virtual void OnStallConditionsChanged(const StallConditionInfo& info) {}
  // The first background error: writes fail with it from now until the
  // database is reopened.
  virtual void OnBackgroundError(const absl::Status& status) {}
};

}  // namespace cairn

#endif  // CAIRN_LISTENER_H_

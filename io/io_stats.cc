#include "io/io_stats.h"

namespace cairn::io {

std::string_view IoCategoryName(IoCategory c) {
  switch (c) {
    case IoCategory::kWal: return "wal";
    case IoCategory::kValueLog: return "vlog";
    case IoCategory::kFlush: return "flush";
    case IoCategory::kCompaction: return "compaction";
    case IoCategory::kGc: return "gc";
    case IoCategory::kManifest: return "manifest";
    case IoCategory::kTable: return "table";
    case IoCategory::kOther: return "other";
  }
  return "unknown";
}

IoCategoryCounters IoStats::Get(IoCategory c) const {
  const Slot& s = slots_[static_cast<int>(c)];
  IoCategoryCounters r;
  r.bytes_written = s.bytes_written.load(std::memory_order_relaxed);
  r.bytes_read = s.bytes_read.load(std::memory_order_relaxed);
  r.write_ops = s.write_ops.load(std::memory_order_relaxed);
  r.read_ops = s.read_ops.load(std::memory_order_relaxed);
  r.sync_ops = s.sync_ops.load(std::memory_order_relaxed);
  r.bytes_prefilled = s.bytes_prefilled.load(std::memory_order_relaxed);
  return r;
}

std::array<IoCategoryCounters, kNumIoCategories> IoStats::GetAll() const {
  std::array<IoCategoryCounters, kNumIoCategories> r;
  for (int i = 0; i < kNumIoCategories; ++i) r[i] = Get(static_cast<IoCategory>(i));
  return r;
}

}  // namespace cairn::io

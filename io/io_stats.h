// IoStats counts bytes and operations per file category. Every byte the
// engine reads or writes passes through a FileSystem, which charges it here;
// these counters are the ground truth of cairn's amplification report.
//
// Thread safety: all methods may be called concurrently (relaxed atomics).
#ifndef CAIRN_IO_IO_STATS_H_
#define CAIRN_IO_IO_STATS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

namespace cairn::io {

// What a file holds. Values are stable (they appear in stats output).
enum class IoCategory : uint8_t {
  kWal = 0,
  kValueLog = 1,
  kFlush = 2,       // SST files written by memtable flushes
  kCompaction = 3,  // SST files written by compactions
  kGc = 4,          // value-log segments written by the garbage collector
  kManifest = 5,    // MANIFEST, CURRENT
  kTable = 6,       // SST files opened for reading
  kOther = 7,
};
inline constexpr int kNumIoCategories = 8;

std::string_view IoCategoryName(IoCategory c);

struct IoCategoryCounters {
  uint64_t bytes_written = 0;
  uint64_t bytes_read = 0;
  uint64_t write_ops = 0;
  uint64_t read_ops = 0;
  uint64_t sync_ops = 0;
  // Zeros written ahead of the appends (FileOptions::prefill_bytes). Not
  // in bytes_written: they hold no data, and the appends that overwrite
  // them are charged there.
  uint64_t bytes_prefilled = 0;
};

class IoStats {
 public:
  void AddWrite(IoCategory c, uint64_t bytes) {
    auto& s = slots_[static_cast<int>(c)];
    s.bytes_written.fetch_add(bytes, std::memory_order_relaxed);
    s.write_ops.fetch_add(1, std::memory_order_relaxed);
  }
  void AddRead(IoCategory c, uint64_t bytes) {
    auto& s = slots_[static_cast<int>(c)];
    s.bytes_read.fetch_add(bytes, std::memory_order_relaxed);
    s.read_ops.fetch_add(1, std::memory_order_relaxed);
  }
  void AddPrefill(IoCategory c, uint64_t bytes) {
    slots_[static_cast<int>(c)].bytes_prefilled.fetch_add(bytes, std::memory_order_relaxed);
  }
  void AddSync(IoCategory c) {
    slots_[static_cast<int>(c)].sync_ops.fetch_add(1, std::memory_order_relaxed);
  }
  IoCategoryCounters Get(IoCategory c) const;
  std::array<IoCategoryCounters, kNumIoCategories> GetAll() const;

 private:
  struct Slot {
    std::atomic<uint64_t> bytes_written{0};
    std::atomic<uint64_t> bytes_read{0};
    std::atomic<uint64_t> write_ops{0};
    std::atomic<uint64_t> read_ops{0};
    std::atomic<uint64_t> sync_ops{0};
    std::atomic<uint64_t> bytes_prefilled{0};
  };
  std::array<Slot, kNumIoCategories> slots_;
};

}  // namespace cairn::io

#endif  // CAIRN_IO_IO_STATS_H_

// BlockBuilder assembles one SST block (data or index) in memory: entries with
// prefix-compressed keys, a restart point every restart_interval entries, then
// the restart array and its count. Layout: docs/table_format.md, "Block
// contents".
//
// Thread safety: none; one builder per thread.
#ifndef CAIRN_LSM_BLOCK_BUILDER_H_
#define CAIRN_LSM_BLOCK_BUILDER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cairn::lsm {

inline constexpr int kDefaultBlockRestartInterval = 16;

class BlockBuilder {
 public:
  // REQUIRES: restart_interval >= 1.
  explicit BlockBuilder(int restart_interval = kDefaultBlockRestartInterval);

  BlockBuilder(const BlockBuilder&) = delete;
  BlockBuilder& operator=(const BlockBuilder&) = delete;

  // Appends an entry. REQUIRES: Finish() not called since the last Reset(),
  // and key greater than every key added before (the caller checks the order;
  // the builder only prefix-compresses).
  void Add(std::string_view key, std::string_view value);

  // Appends the restart array and returns the finished block contents, valid
  // until Reset() or destruction.
  std::string_view Finish();

  // Empties the builder for the next block.
  void Reset();

  // Bytes the block would take if finished now (without the trailer).
  size_t CurrentSizeEstimate() const;

  bool empty() const { return buffer_.empty(); }
  int num_entries() const { return num_entries_; }

 private:
  const int restart_interval_;
  std::string buffer_;
  std::vector<uint32_t> restarts_;
  int counter_ = 0;  // entries since the last restart point
  int num_entries_ = 0;
  bool finished_ = false;
  std::string last_key_;
};

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_BLOCK_BUILDER_H_

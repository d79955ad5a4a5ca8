// Block is one parsed, verified-to-be-well-framed SST block (data or index)
// held in memory: its uncompressed contents and the restart array found at
// their end. Keys are internal keys (lsm/dbformat.h), ordered by
// CompareInternalKeys. Layout: docs/table_format.md, "Block contents".
//
// Bytes come from disk and are never trusted: Create checks the restart array,
// and the iterator checks every entry it decodes, turning bad bytes into a
// DataLoss status that names the block's origin and the offset in the block.
// Nothing reads outside the contents.
//
// Thread safety: a Block is immutable; any number of threads may iterate it
// at once (each with its own iterator). Blocks are shared through
// std::shared_ptr<const Block> so an evicted cache entry stays alive while an
// iterator uses it.
#ifndef CAIRN_LSM_BLOCK_H_
#define CAIRN_LSM_BLOCK_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "lsm/internal_iterator.h"

namespace cairn::lsm {

class Block {
 public:
  // Parses contents. origin names where the bytes came from (for example
  // "/db/000012.sst block at offset 4096") and prefixes every error.
  // DataLoss when the restart array is malformed.
  static absl::StatusOr<std::shared_ptr<const Block>> Create(std::string contents,
                                                             std::string origin);

  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;

  // An iterator over the block's entries. The block must outlive it; callers
  // that cannot promise that hold a shared_ptr beside the iterator. A corrupt
  // entry ends the iteration with a DataLoss status().
  std::unique_ptr<InternalIterator> NewIterator() const;

  // Uncompressed bytes held (the block-cache charge).
  size_t size() const { return contents_.size(); }
  uint32_t num_restarts() const { return num_restarts_; }
  std::string_view contents() const { return contents_; }
  const std::string& origin() const { return origin_; }

 private:
  Block(std::string contents, std::string origin, uint32_t restarts_offset,
        uint32_t num_restarts);

  const std::string contents_;
  const std::string origin_;
  const uint32_t restarts_offset_;  // where the restart array begins
  const uint32_t num_restarts_;

  friend class BlockIterator;
};

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_BLOCK_H_

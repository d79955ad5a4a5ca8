// Table reads one immutable SST file written by TableBuilder: point lookups
// behind the bloom filter, and two-level iteration (index block, then data
// blocks). The index block, filter and properties are read once at Open and
// held for the table's life; data blocks go through the BlockCache when one is
// given. Layout: docs/table_format.md.
//
// Every block read from disk has its checksum verified; a bad byte anywhere
// becomes DataLoss naming the file and the offset, never a crash or a wrong
// answer.
//
// Thread safety: a Table is immutable after Open; Get, NewIterator and
// VerifyAll may run from many threads at once. Each iterator is used by one
// thread at a time.
#ifndef CAIRN_LSM_TABLE_H_
#define CAIRN_LSM_TABLE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/aligned_buffer.h"
#include "io/file_system.h"
#include "lsm/block.h"
#include "lsm/block_cache.h"
#include "lsm/bloom_filter.h"
#include "lsm/dbformat.h"
#include "lsm/internal_iterator.h"
#include "lsm/range_tombstone.h"
#include "lsm/read_counters.h"
#include "lsm/seek_batch.h"
#include "lsm/table_builder.h"
#include "lsm/table_format.h"

namespace cairn::lsm {

struct TableReadOptions {
  // Blocks are verified whenever they are read from the device, whatever
  // this says (a cached block was verified when it was read); kept for the
  // public ReadOptions it mirrors.
  bool verify_checksums = true;
  // Put data blocks read by this operation into the block cache.
  bool fill_cache = true;
  // How an iterator reads the data blocks it misses in the cache. 0: as
  // RocksDB's iterators do, one block per read until it has taken
  // kReadaheadAfterBlocks blocks in file order, then reads that also cover
  // the next kInitialReadahead bytes, doubling per read up to kMaxReadahead;
  // a block out of order starts over. Positive: every read covers at least
  // this many bytes from the block on (compaction inputs). Gets read one
  // block whatever this says.
  size_t readahead_size = 0;
  // The keys looked up are expected to be there (GC's liveness checks):
  // Version::Get does not consult the filter of the deepest level holding
  // tables, where such a key almost always is and the filter would only
  // confirm it at the cost of a cache miss per probe (RocksDB's
  // optimize_filters_for_hits leaves that level without filters instead).
  bool expect_hits = false;
  // Table::Get: skip the filter (Version::Get sets it for that level).
  bool skip_filter = false;
  // Table::Get from the block cache alone: a lookup that needs a data block
  // the cache lacks reads nothing and sets TableGetResult::needs_read
  // instead (the first pass of a batch of lookups, whose misses are then
  // read together; DBImpl::LookupBatchInView).
  bool cache_only = false;
};

inline constexpr int kReadaheadAfterBlocks = 2;
inline constexpr size_t kInitialReadahead = 8 * 1024;
inline constexpr size_t kMaxReadahead = 256 * 1024;

// What one iterator has read ahead of its position, and the pattern of its
// reads so far (see TableReadOptions::readahead_size). Used by one thread.
class TableReadahead {
 public:
  explicit TableReadahead(size_t fixed_size) : fixed_size_(fixed_size) {}

  // Notes that the iterator takes the block at handle (from the cache or
  // not): a block right after the previous one continues the pattern, any
  // other starts it over.
  void Took(const BlockHandle& handle);

  // The contents of the block at handle of file (whose blocks end at
  // data_end): from the buffer when it holds the block, else with the read
  // the pattern asks for, which refills the buffer when it reaches ahead.
  // Errors and counters as ReadBlockContents.
  absl::StatusOr<std::string> Read(const io::RandomAccessFile& file, uint64_t data_end,
                                   const BlockHandle& handle, ReadCounters* counters);

  // Whether the buffer holds the whole block at handle.
  bool Holds(const BlockHandle& handle) const {
    return handle.offset >= buffer_offset_ &&
           handle.offset + handle.size + kBlockTrailerSize <= buffer_offset_ + buffer_.size();
  }

 private:
  const size_t fixed_size_;
  io::AlignedBuffer buffer_;  // file bytes from buffer_offset_
  uint64_t buffer_offset_ = 0;
  uint64_t next_offset_ = UINT64_MAX;  // just past the last block taken
  int in_order_ = 0;                   // blocks taken in file order, the last one included
  size_t next_size_ = kInitialReadahead;
};

struct TableGetResult {
  // An entry for the user key visible at the lookup sequence exists. A
  // deletion is found too, with type kDeletion and an empty value.
  bool found = false;
  ValueType type = ValueType::kValue;
  SequenceNumber sequence = 0;
  std::string value;  // inline value or value-pointer bytes
  // TableReadOptions::cache_only: the lookup stopped at a data block the
  // cache lacks; found is false and says nothing.
  bool needs_read = false;
};

class Table {
 public:
  // Reads the footer, index, filter and properties of file (file_size bytes
  // long). file_number keys the block cache. cache and counters may be null.
  // Errors: DataLoss naming the file ("not an SST file" for a bad magic),
  // FailedPrecondition for an unknown format version, I/O errors as read.
  static absl::StatusOr<std::unique_ptr<Table>> Open(const TableOptions& options,
                                                     std::unique_ptr<io::RandomAccessFile> file,
                                                     uint64_t file_size, uint64_t file_number,
                                                     BlockCache* cache, ReadCounters* counters);

  ~Table();
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;

  // Finds the newest entry whose user key is ExtractUserKey(lookup_key) and
  // whose sequence is <= the lookup key's (lookup_key = MakeLookupKey(user
  // key, snapshot)). Sets result->found = false when there is none; the
  // status is an error only for bad bytes or I/O failures (InvalidArgument
  // for a malformed lookup key). Counts bloom probes and rejections; a probe
  // the filter lets through that ends with found = false counts as a false
  // positive (also when the key exists only in versions newer than the
  // snapshot, which the filter cannot tell apart).
  absl::Status Get(const TableReadOptions& ro, std::string_view lookup_key,
                   TableGetResult* result) const;

  // Two-level iterator over every entry. The Table must outlive it.
  std::unique_ptr<InternalIterator> NewIterator(const TableReadOptions& ro) const;

  // Reads every block from the device (bypassing the cache), verifies its
  // checksum and framing, and checks that keys strictly increase, lie within
  // their index separators and agree with the properties. For `cairn check`.
  // DataLoss naming the file and offset on the first failure.
  absl::Status VerifyAll() const;

  // The data block at handle, from the cache or the device; with
  // readahead (may be null), from or into what it holds, as its pattern
  // says. For the iterator; DataLoss naming file and offset when it is bad.
  absl::StatusOr<std::shared_ptr<const Block>> ReadDataBlock(
      const TableReadOptions& ro, const BlockHandle& handle,
      TableReadahead* readahead = nullptr) const;

  // A batched seek's block (lsm/seek_batch.h), in three steps:
  // StartFetch takes it from the cache, or sets up the read of it
  // (fetch->request, into fetch->buf), or fails it for a handle outside
  // the data blocks; after the batch's reads, FinishFetch checks what was
  // read and makes the block; TakeFetched hands it to the iterator, as
  // ReadDataBlock would have (counters, the cache, the readahead pattern).
  void StartFetch(BlockFetch* fetch) const;
  void FinishFetch(BlockFetch* fetch) const;
  absl::StatusOr<std::shared_ptr<const Block>> TakeFetched(const TableReadOptions& ro,
                                                           const BlockFetch& fetch,
                                                           TableReadahead* readahead) const;
  const io::RandomAccessFile& file() const { return *file_; }
  // DB::MultiGet's reads ahead of its Gets: adds to batch the data block
  // that Get(ro, lookup_key) would read first, unless the cache holds it.
  // False when Get would read no block here (the filter rules the key
  // out, or it lies past the last block): the lookup goes on to the next
  // table. Adds nothing, and returns true, when there is no cache to hand
  // the block to (then the Get reads it itself). Counts no filter probe.
  bool AddGetRead(const TableReadOptions& ro, std::string_view lookup_key,
                  SeekBatch* batch) const;
  // Puts a block the batch read into the cache, counted as a miss.
  void CacheFetched(const BlockFetch& fetch) const;

  // The handle of every data block, in file order, from the index. For
  // salvage (`cairn repair` reads each with ReadDataBlock and goes on past
  // a bad one). DataLoss naming the file for a bad index entry.
  absl::StatusOr<std::vector<BlockHandle>> DataBlockHandles() const;

  // For splitting a compaction into key ranges (lsm/subcompaction.h), from
  // the index alone, without reading data blocks:
  // about `count` index separators spread evenly over the table, in order
  // (each is an internal key between two data blocks' keys);
  std::vector<std::string> SampleIndexKeys(size_t count) const;
  // and the offset of the data block that holds the first entry >=
  // internal_key, or the end of the data blocks when no block does (the
  // filter, properties and index follow them). A bad index entry counts as
  // that end (the estimate only steers the split).
  uint64_t ApproximateOffsetOf(std::string_view internal_key) const;
  // For size estimates (DB::GetApproximateSizes), also from the index
  // alone: where in the data the entries of user keys >= user_key begin.
  // The block is found as above; inside it the place is interpolated from
  // where user_key lies between the separators around the block (the
  // table's smallest user key before the first), read as numbers past
  // their common prefix, as if the block's entries were spread evenly: a
  // range of a few blocks is then not off by a whole block at each end.
  double InterpolatedOffsetOf(std::string_view user_key,
                              std::string_view smallest_user_key) const;
  // The end of the data blocks (where the filter or properties begin).
  uint64_t DataEnd() const;

  uint64_t file_number() const { return file_number_; }
  uint64_t file_size() const { return file_size_; }
  const std::string& path() const { return file_->path(); }
  const TableProperties& properties() const { return props_; }
  uint64_t num_entries() const { return props_.num_entries; }
  // The range-deletion block (format 2), read and fragmented at Open; null
  // when the table has none.
  const RangeTombstonesPtr& range_tombstones() const { return range_tombstones_; }
  const std::vector<RangeTombstone>& range_tombstone_list() const {
    return range_tombstone_list_;
  }
  uint64_t num_deletions() const { return props_.num_deletions; }
  uint64_t raw_key_bytes() const { return props_.raw_key_bytes; }
  uint64_t raw_value_bytes() const { return props_.raw_value_bytes; }
  SequenceNumber smallest_sequence() const { return props_.smallest_sequence; }
  SequenceNumber largest_sequence() const { return props_.largest_sequence; }
  bool has_filter() const { return filter_.has_value(); }

 private:
  Table(std::unique_ptr<io::RandomAccessFile> file, uint64_t file_size, uint64_t file_number,
        BlockCache* cache, ReadCounters* counters);

  const std::unique_ptr<io::RandomAccessFile> file_;
  const uint64_t file_size_;
  const uint64_t file_number_;
  BlockCache* const cache_;
  ReadCounters* const counters_;

  Footer footer_;
  std::shared_ptr<const Block> index_block_;
  std::string filter_data_;             // the filter's bytes; filter_ views them
  std::optional<BloomFilter> filter_;  // empty when the table has none
  TableProperties props_;
  std::vector<RangeTombstone> range_tombstone_list_;
  RangeTombstonesPtr range_tombstones_;
};

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_TABLE_H_

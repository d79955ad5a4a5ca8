// TableBuilder writes one immutable SST file: data blocks of internal-key
// entries, one bloom filter over the user keys, a properties block, an index
// block and the footer. Layout: docs/table_format.md.
//
// Thread safety: one thread at a time.
#ifndef CAIRN_LSM_TABLE_BUILDER_H_
#define CAIRN_LSM_TABLE_BUILDER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "io/file_system.h"
#include "lsm/block_builder.h"
#include "lsm/bloom_filter.h"
#include "lsm/range_tombstone.h"
#include "lsm/table_format.h"

namespace cairn::lsm {

// Options shared by the writer and the reader of tables.
struct TableOptions {
  // Uncompressed bytes after which a data block is cut.
  size_t block_size = 4096;
  // Bloom filter bits per user key; 0 writes no filter.
  int bloom_bits_per_key = 10;
  // zstd-compress blocks, keeping the result only if it saves >= 1/8.
  bool compress = true;
  int zstd_level = 1;
  // Open table files with O_DIRECT (used by TableCache).
  bool direct_reads = false;
  // Where builders' bloom filters take their hash lists from and give them
  // back (lsm/bloom_filter.h); null: each builder allocates its own.
  std::shared_ptr<BloomHashPool> bloom_hash_pool;
  // The value-log bytes a kValuePointer entry's value names (the value log
  // decodes pointers; the LSM never looks inside), summed into the
  // value_pointer_bytes property (tag 9). Null: the property is not
  // written. A pointer that does not decode counts 0 (its reads report it).
  std::function<uint64_t(std::string_view pointer)> value_pointer_bytes;
  // Called when a table of format version 3 (one holding expiring entries)
  // is opened; may be empty. The DB learns from it that its LSM may hold
  // expiring entries (core/db_impl.h, expiring_entries_seen_).
  std::function<void()> on_expiring_table;
};

class TableBuilder {
 public:
  // Writes to file, which it does not own; file must outlive the builder.
  TableBuilder(const TableOptions& options, io::WritableFile* file);
  ~TableBuilder();

  TableBuilder(const TableBuilder&) = delete;
  TableBuilder& operator=(const TableBuilder&) = delete;

  // Appends an entry. REQUIRES: Finish() and Abandon() not called.
  // InvalidArgument when internal_key is not a valid internal key or is not
  // strictly greater than the previous one. An I/O error is returned and
  // becomes sticky: every later call returns it.
  absl::Status Add(std::string_view internal_key, std::string_view value);

  // Writes the last data block, filter, properties, index and footer. Does
  // not sync or close the file. REQUIRES: Finish() and Abandon() not called.
  absl::Status Finish();

  // Gives up on the table; the caller deletes the file.
  void Abandon();

  // Called with each data block as it is written: its offset in the file
  // and its uncompressed contents (valid during the call only). The DB
  // uses it to put a new table's blocks in the block cache.
  using DataBlockSink = std::function<void(uint64_t offset, std::string_view contents)>;
  void set_data_block_sink(DataBlockSink sink) { sink_ = std::move(sink); }

  uint64_t NumEntries() const { return props_.num_entries; }
  // Bytes handed to the file so far (the final file size after Finish()).
  uint64_t FileSize() const { return offset_; }
  // Adds a range tombstone to the table's range-deletion block (table
  // format 2; a table without one is written as format 1). Any order; the
  // caller clips it to the table's share of the key space.
  void AddRangeTombstone(const RangeTombstone& t);
  uint64_t NumRangeDeletions() const { return range_tombstones_.size(); }
  // Smallest and largest internal keys added, widened to span the range
  // tombstones (as internal keys of begin and end that sort before every
  // entry of their user key); empty before the first Add.
  std::string smallest_key() const;
  std::string largest_key() const;
  const TableProperties& properties() const { return props_; }

 private:
  // Cuts the current data block and writes it.
  absl::Status FlushDataBlock();
  // Compresses contents if allowed and worthwhile, then appends the stored
  // block and its trailer; *handle says where it went.
  absl::Status WriteBlock(std::string_view contents, bool allow_compression,
                          BlockHandle* handle);
  // Adds the index entry of the block just written, separating it from next
  // (empty for the last block).
  void AddIndexEntry(std::string_view next_key);

  const TableOptions options_;
  io::WritableFile* const file_;
  uint64_t offset_ = 0;
  absl::Status status_;
  bool closed_ = false;

  BlockBuilder data_block_;
  BlockBuilder index_block_;
  std::unique_ptr<BloomFilterBuilder> filter_;  // null when bloom is off
  TableProperties props_;
  std::string smallest_key_;
  std::string last_key_;
  // The index entry of the last written data block waits for the next key
  // so its separator can be short.
  bool pending_index_entry_ = false;
  BlockHandle pending_handle_;
  std::string compressed_;  // scratch
  std::vector<RangeTombstone> range_tombstones_;
  std::string range_smallest_, range_largest_;
  DataBlockSink sink_;
};

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_TABLE_BUILDER_H_

// SeekBatch gathers the data-block reads that the sorted runs under one
// merged iterator need for a Seek, so that they are made together instead
// of one after another. A seek over a memtable, two L0 tables and a level
// used to wait for three device reads in turn; with the batch it waits for
// one round trip, with every read in flight at once (one submission across
// files on the io_uring backend; FileSystem::MultiReadFiles).
//
// DB::MultiGet uses it too: the block each key's Get would read first is
// read in one batch into the block cache (Version::AddGetReads), and the
// Gets then find it there.
//
// Protocol (InternalIterator::PrepareSeek): the merged iterator calls
// PrepareSeek(target, &batch) on every child, then Run, then Seek(target)
// on every child. A table iterator adds the block its Seek will start
// from, unless it already holds it; its Seek then takes the block from its
// fetch instead of reading it. Every read is verified as any block read
// is: a bad block is DataLoss naming the file and offset, and it fails that
// child's Seek, never the batch.
//
// Thread safety: one thread, like the iterators it serves.
#ifndef CAIRN_LSM_SEEK_BATCH_H_
#define CAIRN_LSM_SEEK_BATCH_H_

#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "io/file_system.h"
#include "lsm/block.h"
#include "lsm/table_format.h"

namespace cairn::lsm {

class Table;

// One data block a seek needs: found in the block cache when the batch was
// made (cached), or to be read by Run.
struct BlockFetch {
  const Table* table = nullptr;
  BlockHandle handle;
  bool cached = false;
  std::string buf;  // the read's bytes: the block and its trailer
  io::ReadRequest request;
  absl::Status status;                  // of the read and the block's checks
  std::shared_ptr<const Block> block;   // when status is OK, after Run
};

class SeekBatch {
 public:
  // The fetch of the block at handle in table (Table::StartFetch decides
  // whether it needs a read); the same fetch for a block added before.
  // Stays valid as long as the batch.
  BlockFetch* Add(const Table* table, const BlockHandle& handle);

  // Makes every read the fetches need, all in flight at once through fs
  // (the file system the tables were opened with), and checks each block.
  // Each fetch's status says how its own read ended.
  void Run(io::FileSystem* fs);

  // Hands every block Run read to its table's cache (Table::CacheFetched),
  // for the lookups that follow (DB::MultiGet reads its keys' blocks this
  // way before looking them up one by one).
  void CacheFetched() const;
  // Keeps table open for as long as the batch (its fetches point at it).
  void KeepAlive(std::shared_ptr<const Table> table) { tables_.push_back(std::move(table)); }

  size_t size() const { return fetches_.size(); }
  // Fetches that Run reads from the device (not cached, handle valid).
  size_t reads() const;

 private:
  std::deque<BlockFetch> fetches_;  // a deque: Add keeps earlier pointers valid
  absl::flat_hash_map<std::pair<const Table*, uint64_t>, BlockFetch*> by_block_;
  std::vector<std::shared_ptr<const Table>> tables_;
};

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_SEEK_BATCH_H_

#include "lsm/seek_batch.h"

#include <vector>

#include "lsm/table.h"

namespace cairn::lsm {

BlockFetch* SeekBatch::Add(const Table* table, const BlockHandle& handle) {
  BlockFetch*& known = by_block_[{table, handle.offset}];
  if (known != nullptr) return known;
  BlockFetch& fetch = fetches_.emplace_back();
  known = &fetch;
  fetch.table = table;
  fetch.handle = handle;
  table->StartFetch(&fetch);
  return &fetch;
}

size_t SeekBatch::reads() const {
  size_t n = 0;
  for (const BlockFetch& f : fetches_) n += !f.cached && f.status.ok() ? 1 : 0;
  return n;
}

void SeekBatch::Run(io::FileSystem* fs) {
  std::vector<io::FileReadRequest> batch;
  for (BlockFetch& f : fetches_) {
    if (f.cached || !f.status.ok()) continue;
    batch.push_back({&f.table->file(), &f.request});
  }
  if (batch.empty()) return;
  // Every request carries its own status; FinishFetch reads it.
  fs->MultiReadFiles(batch).IgnoreError();
  for (BlockFetch& f : fetches_) {
    if (!f.cached && f.status.ok()) f.table->FinishFetch(&f);
  }
}

void SeekBatch::CacheFetched() const {
  for (const BlockFetch& f : fetches_) {
    if (!f.cached && f.status.ok() && f.block != nullptr) f.table->CacheFetched(f);
  }
}

}  // namespace cairn::lsm

// Version is one immutable state of the LSM tree: the table files of every
// level. VersionSet builds a new Version for each VersionEdit it applies and
// shares it as std::shared_ptr<const Version>; a reader that holds one may
// keep using it (and its files stay live) after newer versions are installed.
//
// Levels: L0 holds flushed files whose key ranges may overlap, ordered newest
// first (descending file number). Each level from L1 holds files with
// disjoint key ranges, ordered by smallest key.
//
// Thread safety: a Version is immutable and may be used from many threads.
// FileMetaData::being_compacted is the one mutable field (see its comment).
#ifndef CAIRN_LSM_VERSION_H_
#define CAIRN_LSM_VERSION_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lsm/internal_iterator.h"
#include "absl/synchronization/mutex.h"
#include "lsm/range_tombstone.h"
#include "lsm/seek_batch.h"
#include "lsm/table.h"
#include "lsm/version_edit.h"

namespace cairn::lsm {

class TableCache;

using FileList = std::vector<std::shared_ptr<FileMetaData>>;

class Version {
 public:
  // An empty tree.
  Version() = default;
  // REQUIRES: files are ordered as described above (VersionBuilder does it).
  explicit Version(std::array<FileList, kNumLevels> files);

  Version(const Version&) = delete;
  Version& operator=(const Version&) = delete;

  // REQUIRES: 0 <= level < kNumLevels.
  const FileList& files(int level) const { return files_[level]; }
  uint64_t NumFiles(int level) const { return files_[level].size(); }
  // Sum of the file sizes of level.
  uint64_t LevelBytes(int level) const;

  // Looks up lookup_key (MakeLookupKey(user_key, snapshot)): the L0 files
  // whose range holds the user key, newest first, then at most one file per
  // deeper level (binary search on the files' largest keys). Stops at the
  // first file holding an entry for the user key at or below the snapshot
  // (a value, a value pointer or a deletion) and fills *result; otherwise
  // result->found is false. With ro.cache_only it also stops at the first
  // table whose lookup needs a block the cache lacks (result->needs_read).
  // Errors from the table cache (DataLoss, I/O) are returned as they are.
  absl::Status Get(const TableReadOptions& ro, TableCache* tc, std::string_view lookup_key,
                   TableGetResult* result) const;
  // DB::MultiGet's reads ahead: adds to batch the data block that Get would
  // read first for lookup_key (the first file on Get's path whose filter
  // lets the key through; Table::AddGetRead), and keeps its table open for
  // the batch's life. Errors are left for the Get to report.
  void AddGetReads(const TableReadOptions& ro, TableCache* tc, std::string_view lookup_key,
                   SeekBatch* batch) const;

  // Appends one iterator per L0 file and one level iterator (opening files
  // lazily) per non-empty deeper level; feed them to a merging iterator. The
  // caller holds this Version for as long as the iterators live, which keeps
  // their files out of obsolete-file deletion.
  void AddIterators(const TableReadOptions& ro, TableCache* tc,
                    std::vector<std::unique_ptr<InternalIterator>>* iters) const;

  // Appends to *inputs the files of level whose user-key range intersects
  // [smallest_user_key, largest_user_key] (both inclusive), in level order.
  void GetOverlappingInputs(int level, std::string_view smallest_user_key,
                            std::string_view largest_user_key, FileList* inputs) const;

  // The range tombstones of every table that has any (FileMetaData::
  // num_range_deletions), fragmented together: coverage depends only on
  // sequences (a tombstone deletes what is older than it, whatever the
  // level), so one list serves every level. Built on first use and cached
  // for the Version's life; null when no table has any. Errors opening a
  // table pass through (and are not cached).
  absl::StatusOr<RangeTombstonesPtr> RangeTombstones(TableCache* tc) const;
  uint64_t NumRangeDeletions() const;

  // One line per level with its files' numbers, sizes and key ranges.
  std::string DebugString() const;

 private:
  // Calls visit on each file Get looks in, in Get's order, with the read
  // options for that file, until visit returns true or an error.
  absl::Status WalkGetPath(const TableReadOptions& ro, std::string_view lookup_key,
                           absl::FunctionRef<absl::StatusOr<bool>(const FileMetaData&,
                                                                  const TableReadOptions&)>
                               visit) const;

  std::array<FileList, kNumLevels> files_;  // never changed after construction
  uint64_t num_range_deletions_ = 0;  // NumRangeDeletions(), set at construction
  mutable absl::Mutex range_mu_;
  mutable RangeTombstonesPtr range_tombstones_ ABSL_GUARDED_BY(range_mu_);
  mutable bool range_tombstones_built_ ABSL_GUARDED_BY(range_mu_) = false;
};

// VersionBuilder applies a sequence of VersionEdits to a base Version and
// builds the resulting Version. Files carried over from the base keep their
// FileMetaData objects (and so their being_compacted flags).
//
// Thread safety: one thread at a time; the base must not change meanwhile.
class VersionBuilder {
 public:
  // base may be null: start from an empty tree.
  explicit VersionBuilder(const Version* base);

  // Applies the edit's deleted files, then its new files.
  // Errors (InvalidArgument; the builder is then unusable): a deleted file is
  // not in that level; a new file's number is already in the tree.
  absl::Status Apply(const VersionEdit& edit);

  // Builds the Version. InvalidArgument naming the files when two files of a
  // level from L1 overlap.
  absl::StatusOr<std::shared_ptr<const Version>> Build() const;

 private:
  // Per level: file number -> file.
  std::array<absl::btree_map<uint64_t, std::shared_ptr<FileMetaData>>, kNumLevels> levels_;
  // File number -> level, to refuse a number that is live twice.
  absl::flat_hash_map<uint64_t, int> level_of_;
};

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_VERSION_H_

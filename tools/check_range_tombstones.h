// The range tombstones `cairn check` knows of: those in the current
// version's tables and those in the WALs it has read so far. A pointer that
// one of them covers names a value GC may already have freed (it reads
// through the same tombstones), so check does not call it dangling.
#ifndef CAIRN_TOOLS_CHECK_RANGE_TOMBSTONES_H_
#define CAIRN_TOOLS_CHECK_RANGE_TOMBSTONES_H_

#include <memory>
#include <string_view>
#include <vector>

#include "lsm/range_tombstone.h"
#include "lsm/table_cache.h"
#include "lsm/version.h"

namespace cairn::tools {

class CheckRangeTombstones {
 public:
  void AddWal(std::string_view begin, std::string_view end, lsm::SequenceNumber seq) {
    wal_.push_back({std::string(begin), std::string(end), seq});
    wal_fragmented_.reset();
  }
  // Whether a tombstone newer than seq spans user_key. Tables whose
  // tombstones do not load are left out (their open failure is reported
  // where the table is checked).
  bool Covers(const lsm::Version* version, lsm::TableCache* tc, std::string_view user_key,
              lsm::SequenceNumber seq) {
    if (!tables_loaded_ && version != nullptr && tc != nullptr) {
      tables_loaded_ = true;
      if (auto t = version->RangeTombstones(tc); t.ok()) tables_ = *t;
    }
    if (tables_ != nullptr && tables_->Covers(user_key, seq, lsm::kMaxSequenceNumber)) return true;
    if (wal_.empty()) return false;
    if (wal_fragmented_ == nullptr) {
      wal_fragmented_ = std::make_unique<lsm::FragmentedRangeTombstones>(wal_);
    }
    return wal_fragmented_->Covers(user_key, seq, lsm::kMaxSequenceNumber);
  }

 private:
  std::vector<lsm::RangeTombstone> wal_;
  std::unique_ptr<lsm::FragmentedRangeTombstones> wal_fragmented_;
  lsm::RangeTombstonesPtr tables_;
  bool tables_loaded_ = false;
};

}  // namespace cairn::tools

#endif  // CAIRN_TOOLS_CHECK_RANGE_TOMBSTONES_H_

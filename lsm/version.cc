#include "lsm/version.h"

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "io/status_macros.h"
#include "lsm/level_iterator.h"
#include "lsm/table_cache.h"

namespace cairn::lsm {
namespace {

// Whether user_key lies within f's user-key range.
bool UserKeyInRange(const FileMetaData& f, std::string_view user_key) {
  return user_key.compare(ExtractUserKey(f.smallest)) >= 0 &&
         user_key.compare(ExtractUserKey(f.largest)) <= 0;
}

std::string UserKeyDebugString(std::string_view ikey) {
  const std::string_view u = ikey.size() >= 8 ? ExtractUserKey(ikey) : ikey;
  return absl::CHexEscape(absl::string_view(u.data(), u.size()));
}

}  // namespace

Version::Version(std::array<FileList, kNumLevels> files) : files_(std::move(files)) {
  num_range_deletions_ = NumRangeDeletions();
}

uint64_t Version::LevelBytes(int level) const {
  uint64_t total = 0;
  for (const auto& f : files_[level]) total += f->file_size;
  return total;
}

absl::Status Version::WalkGetPath(const TableReadOptions& ro, std::string_view lookup_key,
                                  absl::FunctionRef<absl::StatusOr<bool>(
                                      const FileMetaData&, const TableReadOptions&)>
                                      visit) const {
  const std::string_view user_key = ExtractUserKey(lookup_key);
  // L0 files overlap; the newest holds the newest entry, so the first hit
  // wins. files_[0] is ordered newest first.
  for (const auto& f : files_[0]) {
    if (!UserKeyInRange(*f, user_key)) continue;
    CAIRN_ASSIGN_OR_RETURN(const bool stop, visit(*f, ro));
    if (stop) return absl::OkStatus();
  }
  // Deeper levels: the only candidate is the first file whose largest key is
  // at or after the lookup key, if it starts at or before the user key.
  // With expect_hits, the deepest level holding tables skips its filter.
  int deepest = kNumLevels;
  TableReadOptions no_filter;
  if (ro.expect_hits) {
    deepest = kNumLevels - 1;
    while (deepest > 0 && files_[deepest].empty()) --deepest;
    no_filter = ro;
    no_filter.skip_filter = true;
  }
  for (int level = 1; level < kNumLevels; ++level) {
    const FileList& files = files_[level];
    const size_t i = FindFile(files, lookup_key);
    if (i == files.size()) continue;
    const FileMetaData& f = *files[i];
    if (user_key.compare(ExtractUserKey(f.smallest)) < 0) continue;
    CAIRN_ASSIGN_OR_RETURN(const bool stop, visit(f, level == deepest ? no_filter : ro));
    if (stop) return absl::OkStatus();
  }
  return absl::OkStatus();
}

absl::Status Version::Get(const TableReadOptions& ro, TableCache* tc,
                          std::string_view lookup_key, TableGetResult* result) const {
  result->found = false;
  CAIRN_RETURN_IF_ERROR(WalkGetPath(
      ro, lookup_key,
      [&](const FileMetaData& f, const TableReadOptions& opts) -> absl::StatusOr<bool> {
        result->found = false;
        CAIRN_RETURN_IF_ERROR(tc->Get(opts, f.number, f.file_size, lookup_key, result));
        return result->found || result->needs_read;
      }));
  return absl::OkStatus();
}

void Version::AddGetReads(const TableReadOptions& ro, TableCache* tc,
                          std::string_view lookup_key, SeekBatch* batch) const {
  WalkGetPath(ro, lookup_key,
              [&](const FileMetaData& f, const TableReadOptions& opts) -> absl::StatusOr<bool> {
                absl::StatusOr<std::shared_ptr<Table>> table = tc->FindTable(f.number, f.file_size);
                if (!table.ok()) return true;  // the Get reports it
                const bool reads = (*table)->AddGetRead(opts, lookup_key, batch);
                batch->KeepAlive(*std::move(table));
                return reads;
              })
      .IgnoreError();  // visit never fails
}

void Version::AddIterators(const TableReadOptions& ro, TableCache* tc,
                           std::vector<std::unique_ptr<InternalIterator>>* iters) const {
  for (const auto& f : files_[0]) {
    iters->push_back(tc->NewIterator(ro, f->number, f->file_size));
  }
  for (int level = 1; level < kNumLevels; ++level) {
    if (files_[level].empty()) continue;
    iters->push_back(NewLevelIterator(ro, tc, files_[level]));
  }
}

void Version::GetOverlappingInputs(int level, std::string_view smallest_user_key,
                                   std::string_view largest_user_key,
                                   FileList* inputs) const {
  for (const auto& f : files_[level]) {
    if (ExtractUserKey(f->largest).compare(smallest_user_key) < 0 ||
        ExtractUserKey(f->smallest).compare(largest_user_key) > 0) {
      continue;
    }
    inputs->push_back(f);
  }
}

uint64_t Version::NumRangeDeletions() const {
  if (num_range_deletions_ != 0) return num_range_deletions_;
  uint64_t n = 0;
  for (const FileList& level : files_) {
    for (const auto& f : level) n += f->num_range_deletions;
  }
  return n;
}

absl::StatusOr<RangeTombstonesPtr> Version::RangeTombstones(TableCache* tc) const {
  // Every read asks: a tree without range tombstones answers without a lock.
  if (num_range_deletions_ == 0) return nullptr;
  absl::MutexLock l(&range_mu_);
  if (range_tombstones_built_) return range_tombstones_;
  std::vector<RangeTombstone> all;
  for (const FileList& level : files_) {
    for (const auto& f : level) {
      if (f->num_range_deletions == 0) continue;
      CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<Table> table, tc->FindTable(f->number, f->file_size));
      const std::vector<RangeTombstone>& list = table->range_tombstone_list();
      all.insert(all.end(), list.begin(), list.end());
    }
  }
  if (!all.empty()) range_tombstones_ = std::make_shared<const FragmentedRangeTombstones>(all);
  range_tombstones_built_ = true;
  return range_tombstones_;
}

std::string Version::DebugString() const {
  std::string r;
  for (int level = 0; level < kNumLevels; ++level) {
    absl::StrAppendFormat(&r, "L%d: %u files, %u bytes\n", level, files_[level].size(),
                          LevelBytes(level));
    for (const auto& f : files_[level]) {
      absl::StrAppendFormat(&r, "  #%u %u bytes ['%s' .. '%s'] seq %u..%u%s\n", f->number,
                            f->file_size, UserKeyDebugString(f->smallest),
                            UserKeyDebugString(f->largest), f->smallest_seq, f->largest_seq,
                            f->being_compacted ? " (compacting)" : "");
    }
  }
  return r;
}

VersionBuilder::VersionBuilder(const Version* base) {
  if (base == nullptr) return;
  for (int level = 0; level < kNumLevels; ++level) {
    for (const auto& f : base->files(level)) {
      levels_[level].emplace(f->number, f);
      level_of_[f->number] = level;
    }
  }
}

absl::Status VersionBuilder::Apply(const VersionEdit& edit) {
  for (const auto& [level, number] : edit.deleted_files()) {
    if (levels_[level].erase(number) == 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("edit deletes file #%u from L%d, which does not hold it", number, level));
    }
    level_of_.erase(number);
  }
  for (const auto& [level, file] : edit.new_files()) {
    auto [it, inserted] = level_of_.emplace(file.number, level);
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "edit adds file #%u to L%d, but it is already live at L%d", file.number, level,
          it->second));
    }
    levels_[level].emplace(file.number, std::make_shared<FileMetaData>(file));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const Version>> VersionBuilder::Build() const {
  std::array<FileList, kNumLevels> files;
  for (int level = 0; level < kNumLevels; ++level) {
    FileList& list = files[level];
    list.reserve(levels_[level].size());
    for (const auto& [number, f] : levels_[level]) list.push_back(f);
    if (level == 0) {
      // Newest first. The btree_map gave ascending numbers.
      std::reverse(list.begin(), list.end());
      continue;
    }
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
      return CompareInternalKeys(a->smallest, b->smallest) < 0;
    });
    for (size_t i = 1; i < list.size(); ++i) {
      if (CompareInternalKeys(list[i - 1]->largest, list[i]->smallest) >= 0) {
        return absl::InvalidArgumentError(
            absl::StrFormat("files #%u ['%s' .. '%s'] and #%u ['%s' .. '%s'] of L%d overlap",
                            list[i - 1]->number, UserKeyDebugString(list[i - 1]->smallest),
                            UserKeyDebugString(list[i - 1]->largest), list[i]->number,
                            UserKeyDebugString(list[i]->smallest),
                            UserKeyDebugString(list[i]->largest), level));
      }
    }
  }
  return std::make_shared<const Version>(std::move(files));
}

}  // namespace cairn::lsm

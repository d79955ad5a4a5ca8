#include "lsm/compaction_job.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "io/status_macros.h"
#include "lsm/filename.h"
#include "lsm/level_iterator.h"
#include "lsm/merging_iterator.h"
#include "lsm/subcompaction.h"

namespace cairn::lsm {
namespace {

// Answers "may a level below the output hold this user key?" for ascending
// user keys, walking each deeper level once.
class DeeperLevels {
 public:
  DeeperLevels(const Version& base, int output_level)
      : base_(base), first_level_(output_level + 1) {}

  bool MayHold(std::string_view user_key) {
    for (int level = first_level_; level < kNumLevels; ++level) {
      const FileList& files = base_.files(level);
      size_t& i = position_[level];
      while (i < files.size() && files[i]->largest_user_key() < user_key) ++i;
      if (i < files.size() && files[i]->smallest_user_key() <= user_key) return true;
    }
    return false;
  }

 private:
  const Version& base_;
  const int first_level_;
  std::array<size_t, kNumLevels> position_{};
};

// Decides where output files end so that none overlaps too many bytes of
// the grandparent level (each such byte is rewritten when the output is
// compacted further down). Fed the output's user keys in order.
class GrandparentCutter {
 public:
  GrandparentCutter(const FileList& grandparents, uint64_t max_overlap_bytes)
      : grandparents_(grandparents), max_overlap_bytes_(max_overlap_bytes) {}

  // Whether the current output should end before user_key, the first
  // entry of a new user key.
  bool ShouldCutBefore(std::string_view user_key) {
    while (next_ < grandparents_.size() &&
           user_key > grandparents_[next_]->largest_user_key()) {
      if (seen_key_) overlap_bytes_ += grandparents_[next_]->file_size;
      ++next_;
    }
    seen_key_ = true;
    if (overlap_bytes_ <= max_overlap_bytes_) return false;
    overlap_bytes_ = 0;
    return true;
  }

 private:
  const FileList& grandparents_;
  const uint64_t max_overlap_bytes_;
  size_t next_ = 0;
  bool seen_key_ = false;
  uint64_t overlap_bytes_ = 0;
};

// The output tables of one job: opens, fills, finishes and, on failure,
// removes them.
class OutputTables {
 public:
  explicit OutputTables(const CompactionJobEnv& env) : env_(env) {}

  bool is_open() const { return builder_ != nullptr; }
  // Bytes written to the open table so far.
  uint64_t OpenFileSize() const { return builder_->FileSize(); }
  const std::vector<FileMetaData>& finished() const { return finished_; }

  absl::Status Open() {
    meta_ = FileMetaData();
    meta_.number = env_.new_file_number();
    numbers_.push_back(meta_.number);
    CAIRN_ASSIGN_OR_RETURN(file_,
                           env_.fs->NewWritableFile(TableFileName(env_.dbname, meta_.number),
                                                    {.category = io::IoCategory::kCompaction}));
    if (env_.output_created) env_.output_created(meta_.number);
    builder_ = std::make_unique<TableBuilder>(env_.table_options, file_.get());
    if (env_.block_sink) builder_->set_data_block_sink(env_.block_sink(meta_.number));
    return absl::OkStatus();
  }

  absl::Status Add(std::string_view key, std::string_view value, SequenceNumber seq) {
    if (builder_->NumEntries() == 0) meta_.smallest_seq = meta_.largest_seq = seq;
    meta_.smallest_seq = std::min(meta_.smallest_seq, seq);
    meta_.largest_seq = std::max(meta_.largest_seq, seq);
    return builder_->Add(key, value);
  }

  // Finishes, syncs and closes the open table, then opens it through the
  // table cache so a table that does not read back is never recorded.
  // tombstones: the range tombstones of the table's share of the key space.
  absl::Status Finish(const std::vector<RangeTombstone>& tombstones = {}) {
    for (const RangeTombstone& t : tombstones) {
      if (builder_->NumEntries() == 0 && builder_->NumRangeDeletions() == 0) {
        meta_.smallest_seq = meta_.largest_seq = t.seq;
      }
      meta_.smallest_seq = std::min(meta_.smallest_seq, t.seq);
      meta_.largest_seq = std::max(meta_.largest_seq, t.seq);
      builder_->AddRangeTombstone(t);
    }
    meta_.num_range_deletions = builder_->NumRangeDeletions();
    CAIRN_RETURN_IF_ERROR(builder_->Finish());
    CAIRN_RETURN_IF_ERROR(file_->Sync());
    CAIRN_RETURN_IF_ERROR(file_->Close());
    meta_.file_size = builder_->FileSize();
    meta_.num_entries = builder_->NumEntries();
    meta_.smallest = builder_->smallest_key();
    meta_.largest = builder_->largest_key();
    builder_.reset();
    file_.reset();
    CAIRN_RETURN_IF_ERROR(env_.table_cache->FindTable(meta_.number, meta_.file_size).status());
    finished_.push_back(std::move(meta_));
    return absl::OkStatus();
  }

  // Drops the open table and removes every table this job created. Removal
  // is best effort: a file left behind is an orphan that obsolete-file
  // deletion reclaims, since no version names it.
  void RemoveAll() {
    if (builder_ != nullptr) builder_->Abandon();
    builder_.reset();
    file_.reset();
    for (uint64_t number : numbers_) {
      env_.table_cache->Evict(number);
      const std::string path = TableFileName(env_.dbname, number);
      if (env_.fs->FileExists(path)) env_.fs->RemoveFile(path).IgnoreError();
    }
    finished_.clear();
  }

 private:
  const CompactionJobEnv& env_;
  std::unique_ptr<io::WritableFile> file_;
  std::unique_ptr<TableBuilder> builder_;
  FileMetaData meta_;
  std::vector<uint64_t> numbers_;  // every number taken, finished or not
  std::vector<FileMetaData> finished_;
};

// The merged entries of every input file, in internal-key order.
std::unique_ptr<InternalIterator> NewInputIterator(const Compaction& c, TableCache* tc,
                                                   size_t readahead) {
  TableReadOptions ro;
  ro.fill_cache = false;  // a compaction reads each block once
  ro.readahead_size = readahead;
  std::vector<std::unique_ptr<InternalIterator>> children;
  for (int which = 0; which < 2; ++which) {
    const FileList& files = c.inputs(which);
    if (files.empty()) continue;
    const int level = which == 0 ? c.level() : c.output_level();
    if (level == 0) {
      for (const auto& f : files) children.push_back(tc->NewIterator(ro, f->number, f->file_size));
    } else {
      children.push_back(NewLevelIterator(ro, tc, files));
    }
  }
  return NewMergingIterator(std::move(children));
}

// Writes the kept entries of ci into outputs, cutting a new table before a
// user key once the open one reaches the target size or overlaps too much
// of the grandparents; one user key's entries always share a table.
// A set *stop (may be null) ends the loop early with Cancelled: another key
// range of the job has failed, so this one's work would be thrown away.
// Each table gets the kept range tombstones (range_dels, may be null) of its
// share of the key space: from the range's start, or the key its
// predecessor was cut before, to the key it is cut before, or the range's
// end (sub_start, sub_end: null for unbounded).
absl::Status WriteOutputs(const Compaction& c, CompactionIterator& ci, OutputTables& outputs,
                          const std::atomic<bool>* stop, uint64_t* output_entries,
                          const FragmentedRangeTombstones* range_dels,
                          const std::string* sub_start, const std::string* sub_end) {
  GrandparentCutter cutter(c.grandparents(), c.MaxGrandparentOverlapBytes());
  std::string last_user_key;
  bool has_last_user_key = false;
  std::string lower = sub_start != nullptr ? *sub_start : std::string();
  auto tombstones_up_to = [&](std::string_view upper) {
    if (range_dels == nullptr) return std::vector<RangeTombstone>();
    return range_dels->ToTombstones(lower, upper);
  };
  for (ci.SeekToFirst(); ci.Valid(); ci.Next()) {
    if (stop != nullptr && stop->load(std::memory_order_relaxed)) {
      return absl::CancelledError("compaction: another key range failed");
    }
    const std::string_view user_key = ci.ikey().user_key;
    if (!has_last_user_key || user_key != last_user_key) {
      const bool too_much_overlap = cutter.ShouldCutBefore(user_key);
      if (outputs.is_open() &&
          (too_much_overlap || outputs.OpenFileSize() >= c.MaxOutputFileSize())) {
        CAIRN_RETURN_IF_ERROR(outputs.Finish(tombstones_up_to(user_key)));
        lower.assign(user_key);
      }
      last_user_key.assign(user_key);
      has_last_user_key = true;
    }
    if (!outputs.is_open()) CAIRN_RETURN_IF_ERROR(outputs.Open());
    CAIRN_RETURN_IF_ERROR(outputs.Add(ci.key(), ci.value(), ci.ikey().sequence));
    ++*output_entries;
  }
  CAIRN_RETURN_IF_ERROR(ci.status());
  std::vector<RangeTombstone> rest =
      tombstones_up_to(sub_end != nullptr ? std::string_view(*sub_end) : std::string_view());
  // Tombstones with no entry left beside them still need a table.
  if (!outputs.is_open() && !rest.empty()) CAIRN_RETURN_IF_ERROR(outputs.Open());
  if (outputs.is_open()) CAIRN_RETURN_IF_ERROR(outputs.Finish(rest));
  return absl::OkStatus();
}

// One key range of a job: its bounds, outputs and result.
struct Subcompaction {
  explicit Subcompaction(const CompactionJobEnv& env) : outputs(env) {}

  const std::string* start = nullptr;  // null: unbounded
  const std::string* end = nullptr;
  // The job's range tombstones: those that drop entries, and those kept.
  RangeTombstonesPtr input_range_dels;
  RangeTombstonesPtr kept_range_dels;
  OutputTables outputs;
  CompactionIteratorStats input_stats;
  uint64_t output_entries = 0;
  absl::Status status;
  // status is the Cancelled of a range stopped because another one failed.
  bool stopped = false;
};

// The range tombstones of c's inputs (*inputs; null when none), and those
// the outputs keep (*kept): a tombstone goes when every live snapshot sees
// it (so what it covers goes in this job) and no level below the output
// holds a key of its range.
absl::Status CollectRangeTombstones(const Compaction& c, const Version& base,
                                    const CompactionJobEnv& env, RangeTombstonesPtr* inputs,
                                    RangeTombstonesPtr* kept, CompactionJobStats* stats) {
  std::vector<RangeTombstone> all;
  for (int which = 0; which < 2; ++which) {
    for (const auto& f : c.inputs(which)) {
      if (f->num_range_deletions == 0) continue;
      CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<Table> table,
                             env.table_cache->FindTable(f->number, f->file_size));
      const std::vector<RangeTombstone>& list = table->range_tombstone_list();
      all.insert(all.end(), list.begin(), list.end());
    }
  }
  if (all.empty()) return absl::OkStatus();
  *inputs = std::make_shared<const FragmentedRangeTombstones>(all);
  const SequenceNumber oldest_view =
      env.snapshots.empty() ? env.latest_sequence : env.snapshots.front();
  std::vector<RangeTombstone> keep;
  for (const auto& f : (*inputs)->fragments()) {
    bool below = false;
    for (int level = c.output_level() + 1; level < kNumLevels && !below; ++level) {
      FileList overlapping;
      base.GetOverlappingInputs(level, f.begin, f.end, &overlapping);
      below = !overlapping.empty();
    }
    for (SequenceNumber seq : f.seqs) {
      if (!below && seq <= oldest_view) {
        ++stats->dropped_range_tombstones;
        continue;
      }
      keep.push_back({f.begin, f.end, seq});
    }
  }
  if (!keep.empty()) *kept = std::make_shared<const FragmentedRangeTombstones>(keep);
  return absl::OkStatus();
}

// Runs one range. A range that fails sets *failed, which stops the others.
void RunSubcompaction(const Compaction& c, const Version& base, const CompactionJobEnv& env,
                      std::atomic<bool>* failed, Subcompaction* sub) {
  std::unique_ptr<InternalIterator> input =
      NewUserKeyRangeIterator(NewInputIterator(c, env.table_cache, env.input_readahead), sub->start, sub->end);
  // Each range walks the deeper levels from its own start.
  DeeperLevels deeper(base, c.output_level());
  CompactionIterator ci(
      input.get(), env.snapshots, env.latest_sequence,
      [&deeper](std::string_view user_key) { return deeper.MayHold(user_key); }, env.listener,
      sub->input_range_dels, {.now_micros = env.now_micros, .filter = env.filter});
  sub->status = WriteOutputs(c, ci, sub->outputs, failed, &sub->output_entries,
                             sub->kept_range_dels.get(), sub->start, sub->end);
  sub->input_stats = ci.stats();
  if (sub->status.ok()) return;
  // The first failure sets the flag; a range that saw it set first only
  // stopped.
  sub->stopped = failed->exchange(true);
}

// Passes each drop to the job's listener, one range at a time.
class SerializedListener : public CompactionListener {
 public:
  explicit SerializedListener(CompactionListener* target) : target_(target) {}
  void OnValueDropped(std::string_view user_key, ValueType type,
                      std::string_view stored_value) override {
    absl::MutexLock l(&mu_);
    target_->OnValueDropped(user_key, type, stored_value);
  }

 private:
  absl::Mutex mu_;
  CompactionListener* const target_;
};

// env for the ranges of a split job: its functions and listener called under
// one mutex, so the caller's need not be thread-safe.
CompactionJobEnv SerializedEnv(const CompactionJobEnv& env, absl::Mutex* mu,
                               SerializedListener* listener) {
  CompactionJobEnv out = env;
  out.new_file_number = [mu, f = env.new_file_number] {
    absl::MutexLock l(mu);
    return f();
  };
  if (env.output_created) {
    out.output_created = [mu, f = env.output_created](uint64_t number) {
      absl::MutexLock l(mu);
      f(number);
    };
  }
  if (env.block_sink) {
    out.block_sink = [mu, f = env.block_sink](uint64_t number) {
      absl::MutexLock l(mu);
      TableBuilder::DataBlockSink sink = f(number);
      if (!sink) return sink;
      // The sink of one table is used by that range's thread alone, but it
      // may share state with the others' (the cache).
      return TableBuilder::DataBlockSink(
          [mu, sink = std::move(sink)](uint64_t offset, std::string_view contents) {
            absl::MutexLock l(mu);
            sink(offset, contents);
          });
    };
  }
  out.listener = env.listener != nullptr ? listener : nullptr;
  return out;
}

}  // namespace

std::string CompactionJobStats::DebugString() const {
  return absl::StrFormat(
      "L%d -> L%d%s: in %u+%u files %u+%u bytes %u entries; out %u files %u bytes %u "
      "entries; dropped %u obsolete (%u under range tombstones) %u tombstones %u range "
      "tombstones %u values (%u bytes); %u us%s",
      level, output_level, trivial_move ? " (trivial move)" : "", input_files[0],
      input_files[1], input_bytes[0], input_bytes[1], input_entries, output_files,
      output_bytes, output_entries, dropped_obsolete, dropped_by_range, dropped_tombstones,
      dropped_range_tombstones, dropped_values,
      dropped_value_bytes, micros,
      subcompactions > 1 ? absl::StrFormat(" in %u key ranges", subcompactions) : "");
}

absl::Status RunCompaction(const Compaction& c, const Version& base, const CompactionJobEnv& env,
                           VersionEdit* edit, CompactionJobStats* stats) {
  CompactionJobStats local_stats;
  if (stats == nullptr) stats = &local_stats;
  *stats = CompactionJobStats();
  stats->level = c.level();
  stats->output_level = c.output_level();
  for (int which = 0; which < 2; ++which) {
    stats->input_files[which] = c.inputs(which).size();
    stats->input_bytes[which] = c.InputBytes(which);
  }
  const absl::Time start = absl::Now();
  absl::Cleanup record_time = [&] {
    stats->micros = static_cast<uint64_t>(absl::ToInt64Microseconds(absl::Now() - start));
  };

  if (c.IsTrivialMove()) {
    const FileMetaData& f = *c.inputs(0).front();
    edit->RemoveFile(c.level(), f.number);
    edit->AddFile(c.output_level(), f);
    stats->trivial_move = true;
    return absl::OkStatus();
  }
  if (env.fs == nullptr || env.table_cache == nullptr || !env.new_file_number) {
    return absl::InvalidArgumentError(
        "CompactionJobEnv needs fs, table_cache and new_file_number");
  }

  // The inputs' range tombstones: they drop the entries they cover, and go
  // on down unless nothing older can lie under them.
  RangeTombstonesPtr input_range_dels, kept_range_dels;
  CAIRN_RETURN_IF_ERROR(
      CollectRangeTombstones(c, base, env, &input_range_dels, &kept_range_dels, stats));

  // Split into key ranges when the job is large enough; each range runs on a
  // thread of its own, the first on this one.
  std::vector<std::string> boundaries = SubcompactionBoundaries(
      c, env.table_cache, SubcompactionCount(c, env.max_subcompactions));
  absl::Mutex env_mu;
  SerializedListener listener(env.listener);
  const CompactionJobEnv split_env = SerializedEnv(env, &env_mu, &listener);
  const CompactionJobEnv& job_env = boundaries.empty() ? env : split_env;
  std::vector<std::unique_ptr<Subcompaction>> subs;
  for (size_t i = 0; i <= boundaries.size(); ++i) {
    auto sub = std::make_unique<Subcompaction>(job_env);
    sub->start = i == 0 ? nullptr : &boundaries[i - 1];
    sub->end = i == boundaries.size() ? nullptr : &boundaries[i];
    sub->input_range_dels = input_range_dels;
    sub->kept_range_dels = kept_range_dels;
    subs.push_back(std::move(sub));
  }
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (size_t i = 1; i < subs.size(); ++i) {
    threads.emplace_back(RunSubcompaction, std::cref(c), std::cref(base), std::cref(job_env),
                         &failed, subs[i].get());
  }
  RunSubcompaction(c, base, job_env, &failed, subs[0].get());
  for (std::thread& t : threads) t.join();

  stats->subcompactions = subs.size();
  absl::Status s;
  for (const auto& sub : subs) {
    const CompactionIteratorStats& cs = sub->input_stats;
    stats->input_entries += cs.input_entries;
    stats->output_entries += sub->output_entries;
    stats->dropped_obsolete += cs.dropped_obsolete;
    stats->dropped_tombstones += cs.dropped_tombstones;
    stats->dropped_by_range += cs.dropped_by_range;
    stats->dropped_values += cs.dropped_values;
    stats->dropped_value_bytes += cs.dropped_value_bytes;
    stats->expired += cs.expired;
    stats->filter_removed += cs.filter_removed;
    stats->filter_changed += cs.filter_changed;
    if (s.ok() && !sub->stopped) s = sub->status;
  }
  if (!s.ok()) {
    // One range failed: the job fails whole, and no range's output stays.
    for (const auto& sub : subs) sub->outputs.RemoveAll();
    return s;
  }
  c.AddInputDeletions(edit);
  for (const auto& sub : subs) {
    for (const FileMetaData& meta : sub->outputs.finished()) {
      edit->AddFile(c.output_level(), meta);
      ++stats->output_files;
      stats->output_bytes += meta.file_size;
    }
  }
  return absl::OkStatus();
}

}  // namespace cairn::lsm

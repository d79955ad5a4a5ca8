#include "core/db_iter.h"

#include <algorithm>
#include <deque>
#include <vector>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "cairn/options.h"
#include "vlog/value_pointer.h"
#include "vlog/vlog_format.h"

namespace cairn {
namespace {

using lsm::ParsedInternalKey;
using lsm::SequenceNumber;
using lsm::ValueType;

// Forward: the internal iterator sits on the entry shown (the newest visible
// version of key()). Reverse: it sits just before every entry of key(), whose
// newest visible version is saved in saved_key_/saved_value_. Bounds: the
// forward scan stops at the first entry at or above the upper bound, the
// reverse scan at the first below the lower bound, and seeks start inside
// [lower, upper).
class DBIter final : public Iterator {
 public:
  DBIter(std::unique_ptr<lsm::InternalIterator> iter, SequenceNumber seq,
         std::shared_ptr<void> keep_alive, ValueResolver resolver, ValuePrefetch prefetch,
         IterateBounds bounds, bool keys_only, uint64_t now_micros)
      : iter_(std::move(iter)),
        sequence_(seq),
        now_micros_(now_micros),
        keep_alive_(std::move(keep_alive)),
        resolver_(std::move(resolver)),
        prefetch_(std::move(prefetch)),
        bounds_(std::move(bounds)),
        keys_only_(keys_only) {}
  ~DBIter() override {
    // Before keep_alive_ releases what they read from; the fetcher waits
    // for its reads in flight.
    fetcher_.reset();
    iter_.reset();
    lookahead_.reset();
  }

  bool Valid() const override { return valid_; }
  std::string_view key() const override { return saved_key_; }
  std::string_view value() const override {
    if (!value_resolved_) {
      // Only under keys_only: every other entry was read when shown.
      ResolveValue();
      if (!status_.ok()) valid_ = false;
    }
    return value_view_;
  }
  uint64_t value_size() const override {
    if (!keys_only_ || value_type_ != ValueType::kValuePointer) return value().size();
    // From the pointer, read or not, so the answer does not change when
    // value() is asked for (a compressed or chunked value's stored length
    // differs from its size; cairn/iterator.h).
    absl::StatusOr<vlog::ValuePointer> p = vlog::DecodeValuePointer(raw_value_);
    const uint64_t header = vlog::kRecordHeaderSize + saved_key_.size();
    if (!p.ok() || p->size < header) {
      status_ = p.ok() ? absl::DataLossError(absl::StrCat("iterator: value pointer ",
                                                          p->DebugString(), " is shorter than ",
                                                          "the record header and key of ",
                                                          saved_key_.size(), " bytes"))
                       : p.status();
      valid_ = false;
      return 0;
    }
    return p->size - header;
  }
  absl::Status status() const override {
    if (!status_.ok()) return status_;
    return iter_->status();
  }

  void SeekToFirst() override {
    if (bounds_.lower) return Seek(*bounds_.lower);
    ResetPrefetch();
    direction_ = kForward;
    iter_->SeekToFirst();
    FindNextUserEntry(/*skipping=*/false, {});
  }
  void SeekToLast() override {
    ResetPrefetch();
    direction_ = kReverse;
    if (bounds_.upper) {
      // Every entry before the upper bound's first possible internal key
      // has a smaller user key.
      iter_->Seek(lsm::MakeLookupKey(*bounds_.upper, lsm::kMaxSequenceNumber));
      if (iter_->Valid()) {
        iter_->Prev();
      } else if (iter_->status().ok()) {
        iter_->SeekToLast();
      }
    } else {
      iter_->SeekToLast();
    }
    FindPrevUserEntry();
  }
  void Seek(std::string_view target) override {
    if (BelowLower(target)) target = *bounds_.lower;
    ResetPrefetch();
    direction_ = kForward;
    iter_->Seek(lsm::MakeLookupKey(target, sequence_));
    FindNextUserEntry(false, {});
  }
  void SeekForPrev(std::string_view target) override {
    if (AtOrAboveUpper(target)) return SeekToLast();
    ResetPrefetch();
    direction_ = kReverse;
    std::string k;
    lsm::AppendInternalKey(&k, target, 0, ValueType::kDeletion);  // last entry of target
    iter_->SeekForPrev(k);
    FindPrevUserEntry();
  }

  void Next() override {
    if (direction_ == kReverse) {
      // iter_ is before every entry of key(); step to the first of them.
      direction_ = kForward;
      if (!iter_->Valid()) {
        iter_->SeekToFirst();
      } else {
        iter_->Next();
      }
      // Now at (or before) key()'s entries: skip them all.
    }
    std::string skip = saved_key_;
    FindNextUserEntry(true, skip);
  }

  void Prev() override {
    if (direction_ == kForward) {
      // iter_ is at key()'s newest visible entry: back up before all of them.
      const std::string current = saved_key_;
      while (true) {
        iter_->Prev();
        if (!iter_->Valid()) break;
        ParsedInternalKey ikey;
        std::string_view value;
        if (!Parse(&ikey, &value)) return;
        if (ikey.user_key < std::string_view(current)) break;
      }
      direction_ = kReverse;
    }
    FindPrevUserEntry();
  }

 private:
  enum Direction { kForward, kReverse };

  // A value read the prefetch window has started, in key order.
  struct Pending {
    std::string stored;     // the pointer
    uint64_t bytes = 0;     // of its record
    bool new_read = false;  // its record starts a device read (else it joins the one before)
  };

  bool AtOrAboveUpper(std::string_view user_key) const {
    return bounds_.upper && user_key >= std::string_view(*bounds_.upper);
  }
  bool BelowLower(std::string_view user_key) const {
    return bounds_.lower && user_key < std::string_view(*bounds_.lower);
  }

  // Parses iter_'s entry into *ikey and *value (the value or pointer bytes,
  // without an expiry): an entry expired at the iterator's time reads as a
  // deletion, one not yet expired as its plain type.
  bool Parse(ParsedInternalKey* ikey, std::string_view* value) {
    lsm::StoredValue sv;
    if (!lsm::ParseInternalKey(iter_->key(), ikey)) {
      status_ = absl::DataLossError("iterator: corrupt internal key");
      valid_ = false;
      return false;
    }
    if (ikey->type == ValueType::kDeletion) return true;
    if (!lsm::SplitStoredValue(ikey->type, iter_->value(), &sv)) {
      status_ = absl::DataLossError("iterator: expiring entry without its expiry");
      valid_ = false;
      return false;
    }
    ikey->type = lsm::IsExpired(sv.expiry_micros, now_micros_) ? ValueType::kDeletion : sv.type;
    *value = sv.payload;
    return true;
  }

  // Moves forward to the newest visible live entry of the first user key
  // after skip (when skipping) and stores it.
  void FindNextUserEntry(bool skipping, std::string skip) {
    valid_ = false;
    for (; iter_->Valid(); iter_->Next()) {
      ParsedInternalKey ikey;
      std::string_view value;
      if (!Parse(&ikey, &value)) return;
      if (AtOrAboveUpper(ikey.user_key)) return;
      if (ikey.sequence > sequence_) continue;
      if (skipping && ikey.user_key <= std::string_view(skip)) continue;
      if (ikey.type == ValueType::kDeletion) {
        // Hide every older entry of this key.
        skip.assign(ikey.user_key);
        skipping = true;
        continue;
      }
      saved_key_.assign(ikey.user_key);
      SaveValue(ikey.type, value);
      valid_ = true;
      ShowValueOrFail();
      return;
    }
  }

  // Moves backward, collecting the newest visible entry of the previous user
  // key; leaves iter_ before all of that key's entries.
  void FindPrevUserEntry() {
    ValueType value_type = ValueType::kDeletion;
    valid_ = false;
    while (iter_->Valid()) {
      ParsedInternalKey ikey;
      std::string_view value;
      if (!Parse(&ikey, &value)) return;
      if (BelowLower(ikey.user_key)) break;  // iter_ stays before the saved key
      if (ikey.sequence <= sequence_) {
        if (value_type != ValueType::kDeletion &&
            ikey.user_key < std::string_view(saved_key_)) {
          break;  // an entry of an earlier key: the saved one is complete
        }
        value_type = ikey.type;
        if (value_type == ValueType::kDeletion) {
          saved_key_.clear();
          raw_value_.clear();
        } else {
          saved_key_.assign(ikey.user_key);
          raw_value_.assign(value);
        }
      }
      iter_->Prev();
    }
    if (value_type == ValueType::kDeletion) return;  // reached the start
    value_type_ = value_type;
    value_resolved_ = false;
    valid_ = true;
    ShowValueOrFail();
  }

  // Reads the value of the entry just found: an entry whose value cannot be
  // read is never shown (as an empty value or otherwise); the iterator
  // turns invalid with the error in status(). The value is read here rather
  // than in value() so that Valid() can promise it, at the price of reading
  // values a key-only scan would not need; ReadOptions::keys_only gives
  // that promise up, and a separated value waits for value(). An error a
  // value() met stays, as a move's does: nothing more is shown.
  void ShowValueOrFail() {
    if (keys_only_ && value_type_ == ValueType::kValuePointer) {
      if (!status_.ok()) valid_ = false;
      return;
    }
    ResolveValue();
    if (!status_.ok()) valid_ = false;
  }

  void SaveValue(ValueType type, std::string_view stored) {
    value_type_ = type;
    raw_value_.assign(stored);
    value_resolved_ = false;
  }

  // Forgets the prefetch window (a seek or a turn moves the scan elsewhere).
  void ResetPrefetch() const {
    for (const Pending& p : window_) fetcher_->Drop(p.stored);
    window_.clear();
    window_bytes_ = 0;
    window_reads_ = 0;
    taken_ = 0;
    taken_bytes_ = 0;
    reads_started_ = 0;
    seek_reads_ = 0;
    trails_.clear();
  }

  bool PrefetchEnabled() const {
    return !keys_only_ && prefetch_.new_lookahead && prefetch_.new_fetcher &&
           prefetch_.max_depth > 1;
  }

  // Device reads the window may hold now (0: read each value alone); a
  // record that lies right after the one before it in the same segment
  // joins that record's read (vlog::kMaxFetchGap, kMaxMergedFetch) and is
  // not counted, so values written or moved in key order come in a few
  // large reads while what a scan reads past its end, in reads, stays
  // within the bound below. With an
  // upper bound nothing past the end is read, so after the slow start of
  // kPrefetchAfterValues values (none now) it grows by two per value
  // taken. Without one the scan's end is
  // unknown and every read ahead may be wasted: the reads started since
  // the seek stay within one more per kUnboundedValuesPerPrefetch values
  // taken, plus reads of about a quarter of the bytes taken up to
  // kUnboundedPrefetchBytes, so that a scan ending now has read at most 5%
  // more times than it showed values and about 256 KiB more. Randomly
  // placed values each need a read; values placed in key order share
  // reads, which leaves room for many.
  size_t WindowDepth() const {
    if (bounds_.upper) {
      const int grown = taken_ >= kPrefetchAfterValues ? 2 + 2 * taken_ : 0;
      return static_cast<size_t>(std::min(prefetch_.max_depth, grown));
    }
    // Plus reads of about a quarter of the bytes taken, at most
    // kUnboundedPrefetchBytes: values at random places (16 KiB and up,
    // written as they came) are a read each, and the device answers several
    // at once in about the time of one. A read's bytes are one value's when
    // each value is a read, more when neighbours share reads.
    uint64_t extra = 0;
    if (taken_ > 0 && reads_started_ > 0) {
      const uint64_t per_read =
          std::max<uint64_t>(1, taken_bytes_ / std::min<uint64_t>(taken_, reads_started_));
      extra = std::min<uint64_t>(kUnboundedPrefetchBytes,
                                 taken_bytes_ / kUnboundedPrefetchShare) / per_read;
    }
    const uint64_t budget = taken_ + taken_ / kUnboundedValuesPerPrefetch + extra;
    const uint64_t ahead = budget > reads_started_ ? budget - reads_started_ : 0;
    return static_cast<size_t>(
        std::min<uint64_t>(prefetch_.max_depth, window_reads_ + ahead));
  }

  // Record bytes the window may hold: bounded, value_prefetch_bytes;
  // unbounded, also at most what the scan has taken since its seek (at
  // least kFirstRunBytes), as RocksDB's readahead grows, so that a scan
  // that ends has read at most about as many bytes past its end as it took.
  uint64_t WindowBytes() const {
    if (bounds_.upper) return prefetch_.max_bytes;
    return std::min<uint64_t>(prefetch_.max_bytes, std::max(kFirstRunBytes, taken_bytes_));
  }

  // The most bytes one read of neighbouring records in `segment` may cover.
  // Bounded, the fetcher's limit: nothing past the bound is read.
  // Unbounded, what the scan has taken from that segment since its seek
  // (at least kFirstRunBytes), as RocksDB's readahead grows per file: a
  // scan that ends reads at most about as many bytes past its end in each
  // segment as it took from it. Sized by what the scan took from all
  // segments, a scan over the key-ordered runs of five flushes read ahead
  // in each of them what it took from all five: 1.24 MB per 100-entry scan
  // of 4 KiB values, three times the values it showed.
  uint64_t RunBytes(uint64_t segment) const {
    if (bounds_.upper) return vlog::kMaxMergedFetch;
    uint64_t taken = 0;
    for (const Trail& t : trails_) {
      if (t.segment == segment) taken = t.taken_bytes;
    }
    return std::min<uint64_t>(vlog::kMaxMergedFetch, std::max(kFirstRunBytes, taken));
  }
  // Counts a value the scan took (stored, its pointer) and its record's
  // bytes, also in the trail of its segment when it has one (a value taken
  // before any read of its segment was started has none). A pointer that
  // does not decode counts no bytes; its read reports it.
  void NoteTaken(std::string_view stored) const {
    ++taken_;
    absl::StatusOr<vlog::ValuePointer> p = vlog::DecodeValuePointer(stored);
    if (!p.ok()) return;
    taken_bytes_ += p->size;
    for (Trail& t : trails_) {
      if (t.segment == p->segment_id) t.taken_bytes += p->size;
    }
  }
  static constexpr uint64_t kFirstRunBytes = 16 << 10;

  // Bytes a read starting at ptr's record reads ahead: unbounded, RunBytes
  // once two of the segment's records in a row (in key order) lay next to
  // each other, as RocksDB's readahead starts once reads are sequential, or
  // from its first record when an earlier scan found the segment so (the
  // fetcher's shared hint, dropped once a scan finds it wrong); values at
  // random places (written as they came, or large ones) are read alone, and
  // a scan never reads past its bound. Notes ptr's record.
  struct Readahead {
    uint64_t bytes = 0;
    bool first_of_hinted = false;  // the first record of a hinted segment
  };
  Readahead ReadaheadFor(const vlog::ValuePointer& ptr) const {
    Trail* trail = nullptr;
    for (Trail& t : trails_) {
      if (t.segment == ptr.segment_id) trail = &t;
    }
    if (trail == nullptr) {
      // A segment an earlier scan found in key order reads ahead from its
      // first record (ValueFetcher::KnownInKeyOrder).
      const bool hinted = fetcher_->KnownInKeyOrder(ptr.segment_id) && !bounds_.upper;
      if (trails_.size() < kMaxTrails) {
        trails_.push_back({.segment = ptr.segment_id,
                           .end = ptr.offset + ptr.size,
                           .sequential = hinted,
                           .hinted = hinted});
      }
      return {.bytes = hinted ? RunBytes(ptr.segment_id) : 0, .first_of_hinted = hinted};
    }
    if (ptr.offset + ptr.size == trail->end) {
      // The last record again (a window that stopped at it resumes there).
    } else if (ptr.offset >= trail->end && ptr.offset <= trail->end + vlog::kMaxFetchGap) {
      if (!trail->seen_in_order && !trail->hinted) fetcher_->NoteInKeyOrder(ptr.segment_id);
      trail->seen_in_order = true;
      trail->sequential = true;
    } else if (trail->hinted && !trail->seen_in_order &&
               (ptr.offset < trail->end || ptr.offset - trail->end > vlog::kMaxMergedFetch)) {
      // The hint was wrong: the segment's next record in key order lies
      // behind the last or far ahead, as values at random places do (an
      // earlier scan happened to find two side by side). In a key-ordered
      // segment it lies a little ahead, past older versions of keys that
      // newer segments hold. This scan stops reading ahead in the segment,
      // and the next ones do not start to.
      trail->hinted = false;
      trail->sequential = false;
      fetcher_->ForgetKeyOrder(ptr.segment_id);
    }
    trail->end = ptr.offset + ptr.size;
    return {.bytes = !bounds_.upper && trail->sequential ? RunBytes(ptr.segment_id) : 0};
  }
  // The segments the window's values came from since the seek: where the
  // last one ended, and whether two lay next to each other.
  struct Trail {
    uint64_t segment = 0, end = 0;
    bool sequential = false;     // reads ahead
    bool hinted = false;         // known in key order before this scan
    bool seen_in_order = false;  // two of its records lay side by side
    uint64_t taken_bytes = 0;    // record bytes the scan took from it
  };
  static constexpr size_t kMaxTrails = 16;
  static constexpr size_t kWindowRecordsPerRead = 4;
  size_t MaxWindowRecords() const {
    return static_cast<size_t>(prefetch_.max_depth) * kWindowRecordsPerRead;
  }

  // Keeps the reads of the next pointer entries in flight, window_ holding
  // them in key order: the lookahead walks ahead of iter_, showing what
  // iter_ will show (the newest visible entry of each key, deletions
  // hiding theirs), and each pointer it passes is started. The window
  // stops at the upper bound and at max_bytes of records (holding at least
  // one read).
  void FillWindow(size_t depth) const {
    // Topped up once a quarter is used, so that each submission carries
    // several reads, which the fetcher merges when their records are
    // neighbours (a quarter rather than a half: on randomly placed values
    // the deeper queue gave 3-8% more scans/s).
    if (!window_.empty() && window_reads_ > depth * 3 / 4) return;
    // Unbounded, the bytes run out first when values lie in key order: top
    // up once half of them are used, so that each submission carries a run
    // of neighbours (one read) rather than a record at a time.
    if (!bounds_.upper && !window_.empty() && window_bytes_ * 2 > WindowBytes()) return;
    // Likewise once half of the records it may hold are used: topped up at
    // every value, the window would start one record (one read) at a time.
    if (!window_.empty() && window_.size() * 2 > MaxWindowRecords()) return;
    // The keys started, back to back in one string (a string each was an
    // allocation per value): key_ends[i] is where key i ends.
    std::string keys;
    std::vector<size_t> key_ends;
    std::vector<Pending> started;
    // The runs of neighbouring records started here, one per segment: the
    // fetcher sorts a submission by segment and offset and merges
    // neighbours into one read, so keys whose values lie in a few
    // key-ordered segments (one per flush) interleave their runs.
    struct Run {
      uint64_t segment, start, end, readahead;
    };
    absl::InlinedVector<Run, 8> runs;
    std::vector<uint64_t> readahead;  // per record started
    while (lookahead_->Valid()) {
      ParsedInternalKey ikey;
      if (!lsm::ParseInternalKey(lookahead_->key(), &ikey)) break;  // iter_ reports it
      if (AtOrAboveUpper(ikey.user_key)) break;
      const bool newest = !lookahead_have_last_ || ikey.user_key != lookahead_last_key_;
      lsm::StoredValue entry;
      if (ikey.sequence <= sequence_ && newest &&
          lsm::SplitStoredValue(ikey.type, lookahead_->value(), &entry)) {
        // An expired pointer is shown as a deletion: nothing to read.
        if (entry.type == ValueType::kValuePointer &&
            !lsm::IsExpired(entry.expiry_micros, now_micros_)) {
          absl::StatusOr<vlog::ValuePointer> ptr = vlog::DecodeValuePointer(entry.payload);
          const uint64_t bytes = ptr.ok() ? ptr->size : 0;  // a bad one: its Take reports it
          Run* run = nullptr;
          Readahead ahead;
          if (ptr.ok()) {
            for (Run& r : runs) {
              if (r.segment == ptr->segment_id) run = &r;
            }
            ahead = ReadaheadFor(*ptr);
          }
          // Joins a read made earlier (read ahead past its own records),
          // or one started here: as its record's neighbour, or inside the
          // readahead from its first record.
          const bool covered = ptr.ok() && fetcher_->Covered(*ptr);
          const bool in_run =
              run != nullptr && ptr->offset >= run->start &&
              ptr->offset + ptr->size - run->start <= RunBytes(ptr->segment_id) &&
              (ptr->offset + ptr->size <= run->start + run->readahead ||
               ptr->offset <= run->end + vlog::kMaxFetchGap);
          const bool joins = covered || in_run;
          // Once the scan has taken a value, the first read of each
          // segment known in key order goes out with the others, as an
          // LSM's seek reads a block of each sorted run: a scan that goes
          // on needs each, and starting one only when the last is used
          // costs a device round trip each (kMaxSeekReads at most, outside
          // the 5% budget). A scan that takes one value pays nothing.
          const bool seek_read = !joins && ahead.first_of_hinted && taken_ >= 1 &&
                                 seek_reads_ < kMaxSeekReads;
          if (!joins && window_reads_ >= depth && !seek_read) break;  // resume here
          // Records too are bounded, at kWindowRecordsPerRead per read the
          // depth allows: where neighbours join reads the reads alone would
          // let the window grow by about one record per value taken.
          if (window_.size() + key_ends.size() >= MaxWindowRecords()) {
            break;  // resume here
          }
          const bool empty = window_.empty() && key_ends.empty();
          if (!empty && !seek_read && window_bytes_ + bytes > WindowBytes()) break;  // resume here
          window_bytes_ += bytes;
          keys.append(ikey.user_key);
          key_ends.push_back(keys.size());
          readahead.push_back(ahead.bytes);
          started.push_back({std::string(entry.payload), bytes, !joins});
          if (!joins) {
            ++window_reads_;
            if (seek_read) {
              ++seek_reads_;
            } else {
              ++reads_started_;
            }
          }
          if (covered) {
            // No read of its own.
          } else if (joins) {
            run->end = std::max(run->end, ptr->offset + ptr->size);
          } else if (run != nullptr) {
            *run = {ptr->segment_id, ptr->offset, ptr->offset + ptr->size, ahead.bytes};
          } else if (ptr.ok()) {
            runs.push_back({ptr->segment_id, ptr->offset, ptr->offset + ptr->size, ahead.bytes});
          }
        }
        lookahead_last_key_.assign(ikey.user_key);
        lookahead_have_last_ = true;
      }
      lookahead_->Next();
    }
    if (key_ends.empty()) return;
    std::vector<std::string_view> kv, sv;
    kv.reserve(key_ends.size());
    for (size_t i = 0, from = 0; i < key_ends.size(); from = key_ends[i++]) {
      kv.emplace_back(keys.data() + from, key_ends[i] - from);
    }
    for (const Pending& p : started) sv.push_back(p.stored);
    fetcher_->Start(kv, sv, readahead);
    for (Pending& p : started) window_.push_back(std::move(p));
  }

  void PopWindowFront(bool drop) const {
    if (drop) fetcher_->Drop(window_.front().stored);
    // A read whose first record is used counts as used.
    if (window_.front().new_read) --window_reads_;
    window_bytes_ -= window_.front().bytes;
    window_.pop_front();
  }

  // The value of the pointer entry shown, from the prefetch window; false
  // when the window cannot supply it.
  bool TakePrefetched() const {
    if (!fetcher_) fetcher_ = prefetch_.new_fetcher();
    if (!lookahead_) lookahead_ = prefetch_.new_lookahead();
    // Entries the scan passed without asking for their values.
    while (!window_.empty() && window_.front().stored != raw_value_) PopWindowFront(true);
    if (window_.empty()) {
      // The window opens, or the scan outran the lookahead: start the
      // lookahead at the entry shown. The read of the value shown is
      // always used, so it may be made even where the window holds no
      // read ahead; the records that follow its record join it.
      lookahead_->Seek(iter_->key());
      lookahead_have_last_ = false;
      FillWindow(std::max<size_t>(WindowDepth(), 1));
    }
    if (window_.empty() || window_.front().stored != raw_value_) return false;
    NoteTaken(raw_value_);
    PopWindowFront(false);
    absl::Status s = fetcher_->TakeView(raw_value_, &value_view_, &value_pin_);
    FillWindow(WindowDepth());  // reads for what comes next go out before the value is used
    if (!s.ok()) status_ = s;
    return true;
  }

  void ResolveValue() const {
    value_resolved_ = true;
    value_pin_.reset();
    if (value_type_ == ValueType::kValue) {
      value_view_ = raw_value_;
      return;
    }
    if (value_type_ == ValueType::kValuePointer && direction_ == kForward && PrefetchEnabled()) {
      // The window opens at the first value past the slow start that the
      // value cache does not hold: opening it costs a second seek of the
      // LSM (the lookahead), which a scan over cached values never repays
      // (it halved cached 5-entry scans).
      bool open = !window_.empty() || taken_ >= kPrefetchAfterValues;
      if (open && window_.empty() && prefetch_.cached) {
        if (std::shared_ptr<const std::string> hit = prefetch_.cached(raw_value_)) {
          NoteTaken(raw_value_);
          ++reads_started_;
          value_view_ = *hit;
          value_pin_ = std::move(hit);
          return;
        }
      }
      if (open) {
        if (TakePrefetched()) return;
        ++reads_started_;  // the window could not supply it: read alone below
      } else {
        // Read alone below (a device read or a cache hit, counted as a
        // read); counts toward opening the window.
        ++reads_started_;
        NoteTaken(raw_value_);
      }
    }
    absl::Status s = resolver_(saved_key_, value_type_, raw_value_, &resolved_value_);
    value_view_ = resolved_value_;
    if (!s.ok()) {
      status_ = s;
      value_view_ = {};
    }
  }


  std::unique_ptr<lsm::InternalIterator> iter_;
  const SequenceNumber sequence_;
  // Entries whose expiry is at or before this read as deletions; fixed at
  // the iterator's creation, so a scan sees one state (0: nothing expires).
  const uint64_t now_micros_;
  std::shared_ptr<void> keep_alive_;
  mutable ValueResolver resolver_;
  mutable ValuePrefetch prefetch_;
  mutable std::unique_ptr<lsm::InternalIterator> lookahead_;
  mutable std::unique_ptr<ValueFetcher> fetcher_;
  const IterateBounds bounds_;
  const bool keys_only_;  // ReadOptions::keys_only: values read at value() only
  mutable std::deque<Pending> window_;  // reads started, in key order
  mutable uint64_t window_bytes_ = 0;   // their records' bytes
  mutable size_t window_reads_ = 0;     // device reads among them (Pending::new_read)
  mutable std::string lookahead_last_key_;  // the last user key the lookahead passed
  mutable bool lookahead_have_last_ = false;
  mutable int taken_ = 0;  // values read since the last seek
  mutable uint64_t taken_bytes_ = 0;  // and their records' bytes
  mutable absl::InlinedVector<Trail, 8> trails_;  // ReadaheadFor
  mutable uint64_t reads_started_ = 0;  // value reads since the last seek, the window's included
  mutable int seek_reads_ = 0;  // first reads of segments known in key order, since the seek
  static constexpr int kMaxSeekReads = 8;
  Direction direction_ = kForward;
  mutable bool valid_ = false;  // a failed value() (keys_only) clears it
  std::string saved_key_;
  std::string raw_value_;
  ValueType value_type_ = ValueType::kValue;
  mutable bool value_resolved_ = false;
  // The value shown: raw_value_ (inline), resolved_value_ (read alone), or
  // what value_pin_ holds (a prefetched read's buffer, a cached value).
  mutable std::string_view value_view_;
  mutable std::shared_ptr<const void> value_pin_;
  mutable std::string resolved_value_;
  mutable absl::Status status_;
};

}  // namespace

std::unique_ptr<Iterator> NewDBIterator(std::unique_ptr<lsm::InternalIterator> internal,
                                        SequenceNumber sequence, std::shared_ptr<void> keep_alive,
                                        ValueResolver resolver, ValuePrefetch prefetch,
                                        IterateBounds bounds, bool keys_only,
                                        uint64_t now_micros) {
  return std::make_unique<DBIter>(std::move(internal), sequence, std::move(keep_alive),
                                  std::move(resolver), std::move(prefetch), std::move(bounds),
                                  keys_only, now_micros);
}

}  // namespace cairn

#include "lsm/compaction_iterator.h"

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace cairn::lsm {

CompactionIterator::CompactionIterator(InternalIterator* input,
                                       std::vector<SequenceNumber> snapshots,
                                       SequenceNumber latest_sequence,
                                       KeyMayExistBelow key_may_exist_below,
                                       CompactionListener* listener,
                                       RangeTombstonesPtr range_dels,
                                       CompactionIteratorOptions options)
    : input_(input),
      snapshots_(std::move(snapshots)),
      latest_sequence_(latest_sequence),
      key_may_exist_below_(std::move(key_may_exist_below)),
      listener_(listener),
      range_dels_(range_dels != nullptr && !range_dels->empty() ? std::move(range_dels)
                                                                : nullptr),
      options_(options) {}

bool CompactionIterator::CoveredByRange(size_t stripe) {
  if (range_dels_ == nullptr) return false;
  const int f = range_dels_->FindFragment(ikey_.user_key, range_hint_);
  if (f < 0) return false;
  range_hint_ = f;
  // Newest first: the oldest tombstone newer than the entry is the last one
  // above its sequence. A reader between the two (a snapshot in between)
  // still sees the entry; otherwise nobody does.
  const std::vector<SequenceNumber>& seqs = range_dels_->fragments()[f].seqs;
  auto it = std::lower_bound(seqs.begin(), seqs.end(), ikey_.sequence, std::greater<>());
  if (it == seqs.begin()) return false;  // no tombstone newer than the entry
  return StripeOf(*(it - 1)) == stripe;
}

void CompactionIterator::SeekToFirst() {
  has_current_user_key_ = false;
  status_ = absl::OkStatus();
  input_->SeekToFirst();
  FindNextKept();
}

void CompactionIterator::Next() {
  input_->Next();
  FindNextKept();
}

size_t CompactionIterator::StripeOf(SequenceNumber seq) const {
  const size_t i = static_cast<size_t>(
      std::lower_bound(snapshots_.begin(), snapshots_.end(), seq) - snapshots_.begin());
  if (i < snapshots_.size()) return i;
  // Above every snapshot: the latest state's stripe. An entry newer than the
  // latest sequence the caller gave (it should not exist) gets a stripe of
  // its own, so it never hides anything a reader can see.
  return seq <= latest_sequence_ ? snapshots_.size() : snapshots_.size() + 1;
}

void CompactionIterator::ReportDropped(ValueType type, std::string_view payload,
                                       size_t stored_size) {
  ++stats_.dropped_values;
  stats_.dropped_value_bytes += stored_size;
  if (listener_ != nullptr) listener_->OnValueDropped(ikey_.user_key, type, payload);
}

void CompactionIterator::Rewrite(ValueType t, std::string_view v) {
  key_.clear();
  AppendInternalKey(&key_, ikey_.user_key, ikey_.sequence, t);
  value_.assign(v);
  rewritten_ = true;
  // ikey_'s user key still points into the input's key, which stays put
  // until the next move.
  ikey_.type = t;
}

bool CompactionIterator::ExpireOrFilter(size_t stripe) {
  StoredValue sv;
  if (!SplitStoredValue(ikey_.type, input_->value(), &sv)) {
    status_ = absl::DataLossError(absl::StrCat(
        "compaction input holds an expiring entry without its expiry, key '",
        absl::CHexEscape(absl::string_view(ikey_.user_key.data(), ikey_.user_key.size())), "'"));
    return false;
  }
  bool remove = false;
  if (IsExpired(sv.expiry_micros, options_.now_micros)) {
    ++stats_.expired;
    remove = true;
  } else if (options_.filter != nullptr && stripe == snapshots_.size()) {
    // The newest stripe, above every snapshot: no snapshot sees the entry.
    CompactionEntryFilter::Verdict verdict = CompactionEntryFilter::Verdict::kKeep;
    new_value_.clear();
    status_ = options_.filter->Filter(ikey_.user_key, sv.type, sv.payload, sv.expiry_micros,
                                      &verdict, &new_value_);
    if (!status_.ok()) return false;
    if (verdict == CompactionEntryFilter::Verdict::kRemove) {
      ++stats_.filter_removed;
      remove = true;
    } else if (verdict == CompactionEntryFilter::Verdict::kChangeValue) {
      ++stats_.filter_changed;
      ReportDropped(sv.type, sv.payload, input_->value().size());
      std::string v;
      if (sv.expiry_micros != 0) {
        AppendExpiringValue(&v, sv.expiry_micros, new_value_);
        Rewrite(ValueType::kValueWithExpiry, v);
      } else {
        Rewrite(ValueType::kValue, new_value_);
      }
    }
  }
  if (remove) {
    ReportDropped(sv.type, sv.payload, input_->value().size());
    Rewrite(ValueType::kDeletion, {});
  }
  return true;
}

void CompactionIterator::FindNextKept() {
  valid_ = false;
  rewritten_ = false;
  for (; input_->Valid(); input_->Next()) {
    ++stats_.input_entries;
    if (!ParseInternalKey(input_->key(), &ikey_)) {
      const std::string_view k = input_->key();
      status_ = absl::DataLossError(
          absl::StrCat("compaction input holds a malformed internal key '",
                       absl::CHexEscape(absl::string_view(k.data(), k.size())), "'"));
      return;
    }
    const size_t stripe = StripeOf(ikey_.sequence);
    const bool same_key = has_current_user_key_ && ikey_.user_key == current_user_key_;
    if (!same_key) {
      current_user_key_.assign(ikey_.user_key);
      has_current_user_key_ = true;
    }
    // Entries of one user key arrive newest first, so their stripes never
    // increase; an entry in its predecessor's stripe is hidden by it.
    bool hidden = same_key && stripe == last_stripe_;
    if (!hidden && CoveredByRange(stripe)) {
      hidden = true;
      ++stats_.dropped_by_range;
    }
    last_stripe_ = stripe;
    if (!hidden) {
      rewritten_ = false;
      if (ikey_.type != ValueType::kDeletion &&
          (HasExpiry(ikey_.type) || options_.filter != nullptr) && !ExpireOrFilter(stripe)) {
        return;
      }
      if (ikey_.type == ValueType::kDeletion && stripe == 0 && key_may_exist_below_ &&
          !key_may_exist_below_(ikey_.user_key)) {
        // Every snapshot sees the key deleted and nothing older survives
        // below: the rest of this stripe goes as hidden, so the tombstone
        // is left with nothing to shadow.
        ++stats_.dropped_tombstones;
        continue;
      }
      valid_ = true;
      return;
    }
    ++stats_.dropped_obsolete;
    if (ikey_.type != ValueType::kDeletion) {
      // The listener hears the value without its expiry.
      StoredValue sv;
      if (!SplitStoredValue(ikey_.type, input_->value(), &sv)) {
        sv.type = WithoutExpiry(ikey_.type);
        sv.payload = std::string_view();  // damaged: names no record
      }
      ReportDropped(sv.type, sv.payload, input_->value().size());
    }
  }
  status_ = input_->status();
}

}  // namespace cairn::lsm

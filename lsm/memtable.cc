#include "lsm/memtable.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "io/coding.h"

namespace cairn::lsm {

namespace {

// Decodes the length-prefixed slice at p. The bytes were written by Add (or
// EncodeSeekKey) in this process, so they are trusted: the varint cannot run
// past its 5 bytes.
std::string_view GetLengthPrefixedSlice(const char* p) {
  std::string_view in(p, io::kMaxVarint32Bytes);
  uint32_t len = 0;
  const bool ok = io::GetVarint32(&in, &len);
  assert(ok);
  (void)ok;
  return std::string_view(in.data(), len);
}

// The value of the entry whose internal key ends at p: in the entry, or at
// the address it holds (MemTable::kMaxValueInEntry).
std::string_view EntryValue(const char* p) {
  const std::string_view v = GetLengthPrefixedSlice(p);
  if (v.size() <= MemTable::kMaxValueInEntry) return v;
  const char* out_of_line;
  std::memcpy(&out_of_line, v.data(), sizeof(out_of_line));
  return std::string_view(out_of_line, v.size());
}

// The length-prefixed form of an internal key, which is what the skip list's
// comparator takes as a seek target.
const char* EncodeSeekKey(std::string* scratch, std::string_view internal_key) {
  scratch->clear();
  io::PutVarint32(scratch, static_cast<uint32_t>(internal_key.size()));
  scratch->append(internal_key);
  return scratch->data();
}

}  // namespace

int MemTable::KeyComparator::operator()(const char* a, const char* b) const {
  return CompareInternalKeys(GetLengthPrefixedSlice(a), GetLengthPrefixedSlice(b));
}

// Iterator adapts the skip list's iterator to InternalIterator.
class MemTable::Iterator : public InternalIterator {
 public:
  explicit Iterator(const Table* table) : iter_(table) {}

  bool Valid() const override { return iter_.Valid(); }
  void SeekToFirst() override { iter_.SeekToFirst(); }
  void SeekToLast() override { iter_.SeekToLast(); }
  void Seek(std::string_view target) override { iter_.Seek(EncodeSeekKey(&scratch_, target)); }
  void SeekForPrev(std::string_view target) override {
    iter_.SeekForPrev(EncodeSeekKey(&scratch_, target));
  }
  void Next() override { iter_.Next(); }
  void Prev() override { iter_.Prev(); }
  std::string_view key() const override { return GetLengthPrefixedSlice(iter_.key()); }
  std::string_view value() const override {
    const std::string_view k = key();
    return EntryValue(k.data() + k.size());
  }
  absl::Status status() const override { return absl::OkStatus(); }

 private:
  Table::Iterator iter_;
  std::string scratch_;  // The encoded seek target.
};

size_t MemTable::ArenaBlockSize(size_t write_buffer_size) {
  constexpr size_t kMax = size_t{1} << 20;
  const size_t size = std::clamp(write_buffer_size / 64, Arena::kBlockSize, kMax);
  return size / Arena::kBlockSize * Arena::kBlockSize;
}

MemTable::MemTable(size_t write_buffer_size, std::shared_ptr<ArenaBlockPool> pool)
    : arena_(ArenaBlockSize(write_buffer_size), pool),
      value_arena_(ArenaBlockSize(write_buffer_size), std::move(pool)),
      table_(KeyComparator(), &arena_) {}

void MemTable::Add(SequenceNumber seq, ValueType type, std::string_view user_key,
                   std::string_view value, Cursor* cursor) {
  if (type == ValueType::kRangeDeletion) return AddRangeTombstone(seq, user_key, value);
  Insert(seq, type, user_key, value, cursor);
}

void MemTable::AddRangeTombstone(SequenceNumber seq, std::string_view begin,
                                 std::string_view end) {
  absl::MutexLock l(&range_mu_);
  range_tombstones_.push_back({std::string(begin), std::string(end), seq});
  fragmented_.reset();
  // Released after the tombstone is in the list: a reader that sees the
  // count sees the tombstone.
  num_range_deletions_.fetch_add(1, std::memory_order_release);
}

RangeTombstonesPtr MemTable::RangeTombstones() const {
  if (num_range_deletions() == 0) return nullptr;
  absl::MutexLock l(&range_mu_);
  if (fragmented_ == nullptr) {
    fragmented_ = std::make_shared<const FragmentedRangeTombstones>(range_tombstones_);
  }
  return fragmented_;
}

std::vector<RangeTombstone> MemTable::RangeTombstoneList() const {
  absl::MutexLock l(&range_mu_);
  return range_tombstones_;
}

bool MemTable::AddAndFindSuperseded(SequenceNumber seq, ValueType type, std::string_view user_key,
                                    std::string_view value, Superseded* superseded,
                                    Cursor* cursor) {
  if (type == ValueType::kRangeDeletion) {
    AddRangeTombstone(seq, user_key, value);
    return false;
  }
  // Every earlier entry for user_key has a lower sequence, so sorts after
  // the new one: the entry the insert now precedes is the newest of them,
  // if it is for user_key at all.
  const char* const* next = Insert(seq, type, user_key, value, cursor);
  if (next == nullptr) return false;
  const std::string_view ikey = GetLengthPrefixedSlice(*next);
  ParsedInternalKey parsed;
  if (!ParseInternalKey(ikey, &parsed) || parsed.user_key != user_key) return false;
  superseded->type = parsed.type;
  superseded->value = parsed.type == ValueType::kDeletion
                          ? std::string_view()
                          : EntryValue(ikey.data() + ikey.size());
  return true;
}

const char* const* MemTable::Insert(SequenceNumber seq, ValueType type, std::string_view user_key,
                                    std::string_view value, Cursor* cursor) {
  assert(seq <= kMaxSequenceNumber);
  const size_t ikey_size = user_key.size() + 8;
  const bool in_entry = value.size() <= kMaxValueInEntry;
  const char* out_of_line = nullptr;
  if (!in_entry) {
    char* v = value_arena_.Allocate(value.size());
    std::memcpy(v, value.data(), value.size());
    out_of_line = v;
  }
  const size_t encoded_size = io::VarintLength(ikey_size) + ikey_size +
                              io::VarintLength(value.size()) +
                              (in_entry ? value.size() : sizeof(out_of_line));
  char* const buf = arena_.Allocate(encoded_size);
  char* p = io::EncodeVarint32(buf, static_cast<uint32_t>(ikey_size));
  // memcpy from a null pointer is undefined even for 0 bytes (an empty key
  // or a deletion's empty value may carry one).
  if (!user_key.empty()) std::memcpy(p, user_key.data(), user_key.size());
  p += user_key.size();
  io::EncodeFixed64(p, PackSequenceAndType(seq, type));
  p += 8;
  p = io::EncodeVarint32(p, static_cast<uint32_t>(value.size()));
  if (!in_entry) {
    std::memcpy(p, &out_of_line, sizeof(out_of_line));
    p += sizeof(out_of_line);
  } else if (!value.empty()) {
    std::memcpy(p, value.data(), value.size());
    p += value.size();
  }
  assert(p == buf + encoded_size);
  const char* const* next =
      cursor == nullptr ? table_.Insert(buf) : table_.Insert(buf, &cursor->finger_);
  // Counters are advisory for readers; the entry itself is published by the
  // skip list's release store.
  num_entries_.fetch_add(1, std::memory_order_relaxed);
  if (type == ValueType::kDeletion) num_deletes_.fetch_add(1, std::memory_order_relaxed);
  return next;
}

bool MemTable::Get(std::string_view user_key, SequenceNumber snapshot, ValueType* type,
                   SequenceNumber* seq, std::string* value, Cursor* cursor) const {
  std::string local;
  std::string* const scratch = cursor == nullptr ? &local : &cursor->scratch_;
  // The lookup key, length-prefixed as the comparator takes it.
  scratch->clear();
  io::PutVarint32(scratch, static_cast<uint32_t>(user_key.size() + 8));
  AppendInternalKey(scratch, user_key, snapshot, kValueTypeForSeek);
  const char* const* found = cursor == nullptr
                                 ? table_.Seek(scratch->data())
                                 : table_.Seek(scratch->data(), &cursor->finger_);
  if (found == nullptr) return false;
  // The first entry at or after the lookup key is the newest version of
  // user_key visible at snapshot, if it is for user_key at all.
  const std::string_view ikey = GetLengthPrefixedSlice(*found);
  ParsedInternalKey parsed;
  if (!ParseInternalKey(ikey, &parsed) || parsed.user_key != user_key) return false;
  *type = parsed.type;
  *seq = parsed.sequence;
  if (parsed.type != ValueType::kDeletion) {
    const std::string_view v = EntryValue(ikey.data() + ikey.size());
    value->assign(v.data(), v.size());
  }
  return true;
}

std::unique_ptr<InternalIterator> MemTable::NewIterator() const {
  return std::make_unique<Iterator>(&table_);
}

}  // namespace cairn::lsm

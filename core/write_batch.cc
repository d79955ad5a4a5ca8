#include "cairn/write_batch.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/write_batch_internal.h"
#include "io/coding.h"
#include "io/status_macros.h"

namespace cairn {

using lsm::ValueType;

WriteBatch::WriteBatch() { Clear(); }

void WriteBatch::Clear() {
  status_ = absl::OkStatus();
  rep_.clear();
  rep_.resize(kBatchHeaderSize);
}

void WriteBatch::Reserve(size_t bytes) { rep_.reserve(rep_.size() + bytes); }

uint32_t WriteBatch::Count() const { return io::DecodeFixed32(rep_.data() + 8); }

bool WriteBatch::CheckSizes(std::string_view key, std::string_view value) {
  absl::Status s = WriteBatchInternal::CheckSizes(key, value);
  if (s.ok()) return true;
  if (status_.ok()) status_ = std::move(s);
  return false;
}

void WriteBatch::Put(std::string_view key, std::string_view value) {
  if (CheckSizes(key, value)) WriteBatchInternal::AddEntry(this, ValueType::kValue, key, value);
}

void WriteBatch::PutWithExpiry(std::string_view key, std::string_view value,
                               uint64_t expiry_micros) {
  if (!CheckSizes(key, value)) return;
  if (expiry_micros == 0) {
    if (status_.ok()) {
      status_ = absl::InvalidArgumentError(
          "WriteBatch::PutWithExpiry: an expiry of 0 means none; use Put");
    }
    return;
  }
  std::string stored;
  stored.reserve(lsm::kExpirySize + value.size());
  lsm::AppendExpiringValue(&stored, expiry_micros, value);
  WriteBatchInternal::AddEntry(this, ValueType::kValueWithExpiry, key, stored);
}

void WriteBatch::Delete(std::string_view key) {
  if (CheckSizes(key, {})) WriteBatchInternal::AddEntry(this, ValueType::kDeletion, key, {});
}

void WriteBatch::DeleteRange(std::string_view begin, std::string_view end) {
  absl::Status s = WriteBatchInternal::CheckRange(begin, end);
  if (s.ok()) {
    WriteBatchInternal::AddEntry(this, ValueType::kRangeDeletion, begin, end);
  } else if (status_.ok()) {
    status_ = std::move(s);
  }
}

absl::Status WriteBatch::Handler::DeleteRange(std::string_view begin, std::string_view end) {
  return absl::UnimplementedError(absl::StrCat(
      "WriteBatch::Iterate: the batch holds a range deletion ['", absl::CHexEscape(absl::string_view(begin.data(), begin.size())),
      "', '", absl::CHexEscape(absl::string_view(end.data(), end.size())), "') and this Handler does not override DeleteRange"));
}

absl::Status WriteBatch::Iterate(Handler* handler) const {
  return WriteBatchInternal::ForEach(
      *this, [handler](lsm::SequenceNumber, ValueType type, std::string_view key,
                       std::string_view value) -> absl::Status {
        switch (type) {
          case ValueType::kValue:
            handler->Put(key, value);
            return absl::OkStatus();
          case ValueType::kDeletion:
            handler->Delete(key);
            return absl::OkStatus();
          case ValueType::kRangeDeletion:
            return handler->DeleteRange(key, value);
          case ValueType::kValueWithExpiry: {
            lsm::StoredValue sv;
            if (!lsm::SplitStoredValue(type, value, &sv)) {
              return absl::DataLossError("WriteBatch::Iterate: an expiring put is malformed");
            }
            handler->PutWithExpiry(key, sv.payload, sv.expiry_micros);
            return absl::OkStatus();
          }
          case ValueType::kValuePointer:
          case ValueType::kValuePointerWithExpiry:
            break;
        }
        return absl::InvalidArgumentError("WriteBatch::Iterate: batch holds value pointers");
      });
}

absl::Status WriteBatchInternal::CheckRange(std::string_view begin, std::string_view end) {
  // Both ends are keys: the key limit holds for each.
  if (begin.size() > kMaxKeySize || end.size() > kMaxKeySize) {
    return absl::InvalidArgumentError(absl::StrCat(
        "range deletion end of ", std::max(begin.size(), end.size()),
        " bytes exceeds the key limit of ", kMaxKeySize));
  }
  if (begin >= end) {
    return absl::InvalidArgumentError(
        "range deletion needs begin < end (the end is exclusive); an empty or inverted range "
        "deletes nothing");
  }
  return absl::OkStatus();
}

absl::Status WriteBatchInternal::CheckSizes(std::string_view key, std::string_view value) {
  if (key.size() > kMaxKeySize) {
    return absl::InvalidArgumentError(
        absl::StrCat("key of ", key.size(), " bytes exceeds the limit of ", kMaxKeySize));
  }
  if (value.size() > kMaxValueSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("value of ", value.size(), " bytes exceeds the limit of ", kMaxValueSize));
  }
  return absl::OkStatus();
}

uint64_t WriteBatchInternal::Sequence(const WriteBatch& b) {
  return io::DecodeFixed64(b.rep_.data());
}

void WriteBatchInternal::SetSequence(WriteBatch* b, uint64_t seq) {
  io::EncodeFixed64(b->rep_.data(), seq);
}

void WriteBatchInternal::SetCount(WriteBatch* b, uint32_t n) {
  io::EncodeFixed32(b->rep_.data() + 8, n);
}

absl::Status WriteBatchInternal::SetContents(WriteBatch* b, std::string_view contents) {
  if (contents.size() < kBatchHeaderSize) {
    return absl::DataLossError(
        absl::StrCat("write batch of ", contents.size(), " bytes is shorter than its header"));
  }
  b->rep_.assign(contents.data(), contents.size());
  b->status_ = absl::OkStatus();
  return absl::OkStatus();
}

std::string WriteBatchInternal::EndRecord(uint64_t sequence) {
  WriteBatch end;
  SetSequence(&end, sequence);
  return end.rep_;
}

bool WriteBatchInternal::IsEndRecord(std::string_view contents) {
  return contents.size() == kBatchHeaderSize && io::DecodeFixed32(contents.data() + 8) == 0;
}

std::string WriteBatchInternal::SyncRecord(SyncKind kind, uint64_t synced_sequence) {
  std::string record = EndRecord(synced_sequence);
  record.push_back(static_cast<char>(kind));
  return record;
}

std::string WriteBatchInternal::IngestionEventRecord(uint64_t sequence,
                                                     const std::vector<std::string>& files) {
  std::string record = EndRecord(sequence);
  record.push_back(static_cast<char>(kIngestionEventMarker));
  io::PutVarint32(&record, static_cast<uint32_t>(files.size()));
  for (const std::string& f : files) io::PutLengthPrefixed(&record, f);
  return record;
}

bool WriteBatchInternal::IsIngestionEvent(std::string_view contents) {
  return contents.size() > kBatchHeaderSize + 1 && io::DecodeFixed32(contents.data() + 8) == 0 &&
         static_cast<uint8_t>(contents[kBatchHeaderSize]) == kIngestionEventMarker;
}

absl::Status WriteBatchInternal::ParseIngestionEvent(std::string_view contents, uint64_t* sequence,
                                                     std::vector<std::string>* files) {
  if (!IsIngestionEvent(contents)) {
    return absl::DataLossError("not an ingestion event record");
  }
  *sequence = io::DecodeFixed64(contents.data());
  std::string_view in = contents.substr(kBatchHeaderSize + 1);
  uint32_t n = 0;
  if (!io::GetVarint32(&in, &n) || n > in.size()) {
    return absl::DataLossError("ingestion event record: bad file count");
  }
  files->clear();
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view name;
    if (!io::GetLengthPrefixed(&in, &name)) {
      return absl::DataLossError(absl::StrCat("ingestion event record: file name ", i, " of ", n,
                                              " is cut short"));
    }
    files->emplace_back(name);
  }
  if (!in.empty()) {
    return absl::DataLossError(
        absl::StrCat("ingestion event record: ", in.size(), " bytes after the last file name"));
  }
  return absl::OkStatus();
}

bool WriteBatchInternal::ParseSyncRecord(std::string_view contents, SyncKind* kind,
                                         uint64_t* synced_sequence) {
  if (contents.size() != kBatchHeaderSize + 1 || io::DecodeFixed32(contents.data() + 8) != 0) {
    return false;
  }
  const auto k = static_cast<uint8_t>(contents[kBatchHeaderSize]);
  if (k != static_cast<uint8_t>(SyncKind::kSwitch) &&
      k != static_cast<uint8_t>(SyncKind::kOlderWalsWhole)) {
    return false;
  }
  *kind = static_cast<SyncKind>(k);
  *synced_sequence = io::DecodeFixed64(contents.data());
  return true;
}

void WriteBatchInternal::Append(WriteBatch* dst, const WriteBatch& src) {
  SetCount(dst, dst->Count() + src.Count());
  dst->rep_.append(src.rep_, kBatchHeaderSize, std::string::npos);
}

void WriteBatchInternal::AppendEntries(WriteBatch* dst, std::string_view entries) {
  dst->rep_.append(entries);
}

void WriteBatchInternal::AddEntry(WriteBatch* b, ValueType type, std::string_view key,
                                  std::string_view value) {
  SetCount(b, b->Count() + 1);
  b->rep_.push_back(static_cast<char>(type));
  io::PutLengthPrefixed(&b->rep_, key);
  if (type != ValueType::kDeletion) io::PutLengthPrefixed(&b->rep_, value);
}

absl::Status WriteBatchInternal::WithExpiry(const WriteBatch& b, uint64_t expiry_micros,
                                            WriteBatch* out) {
  out->Clear();
  SetSequence(out, Sequence(b));
  std::string stored;
  return ForEach(b, [&](lsm::SequenceNumber, ValueType type, std::string_view key,
                        std::string_view value) {
    if (type == ValueType::kValue) {
      stored.clear();
      lsm::AppendExpiringValue(&stored, expiry_micros, value);
      AddEntry(out, ValueType::kValueWithExpiry, key, stored);
    } else {
      AddEntry(out, type, key, value);
    }
    return absl::OkStatus();
  });
}

absl::Status WriteBatchInternal::ForEach(const WriteBatch& b, EntryFn fn) {
  return ForEach(std::string_view(b.rep_), fn);
}

absl::Status WriteBatchInternal::ForEach(std::string_view contents, EntryFn fn) {
  if (contents.size() < kBatchHeaderSize) {
    return absl::DataLossError("write batch shorter than its header");
  }
  const uint64_t seq = io::DecodeFixed64(contents.data());
  const uint32_t count = io::DecodeFixed32(contents.data() + 8);
  std::string_view in = contents.substr(kBatchHeaderSize);
  uint32_t found = 0;
  while (!in.empty()) {
    const uint8_t t = static_cast<uint8_t>(in[0]);
    in.remove_prefix(1);
    if (!lsm::IsValidBatchType(t)) {
      return absl::DataLossError(absl::StrCat("write batch entry ", found, ": unknown type ", t));
    }
    const auto type = static_cast<ValueType>(t);
    std::string_view key, value;
    if (!io::GetLengthPrefixed(&in, &key) ||
        (type != ValueType::kDeletion && !io::GetLengthPrefixed(&in, &value))) {
      return absl::DataLossError(absl::StrCat("write batch entry ", found, " is truncated"));
    }
    if (lsm::HasExpiry(type)) {
      lsm::StoredValue sv;
      if (!lsm::SplitStoredValue(type, value, &sv)) {
        return absl::DataLossError(
            absl::StrCat("write batch entry ", found, ": expiring value without its expiry"));
      }
    }
    CAIRN_RETURN_IF_ERROR(fn(seq + found, type, key, value));
    ++found;
  }
  if (found != count) {
    return absl::DataLossError(
        absl::StrCat("write batch holds ", found, " entries but its header says ", count));
  }
  return absl::OkStatus();
}

}  // namespace cairn

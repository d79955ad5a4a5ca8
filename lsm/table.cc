#include "lsm/table.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "io/status_macros.h"

namespace cairn::lsm {
namespace {

std::string BlockOrigin(const std::string& path, uint64_t offset) {
  return absl::StrCat(path, ": block at offset ", offset);
}

// Decodes the block handle stored as an index entry's value.
absl::StatusOr<BlockHandle> DecodeIndexValue(std::string_view value, const std::string& origin) {
  BlockHandle handle;
  if (!handle.DecodeVarintFrom(&value) || !value.empty()) {
    return absl::DataLossError(absl::StrCat(origin, ": malformed block handle in index"));
  }
  return handle;
}

// The same for a lookup, which names the index block (path, offset) only in
// an error: a Get does not build the string for nothing.
absl::StatusOr<BlockHandle> DecodeIndexValue(std::string_view value, const std::string& path,
                                             uint64_t index_offset) {
  BlockHandle handle;
  std::string_view in = value;
  if (handle.DecodeVarintFrom(&in) && in.empty()) return handle;
  return DecodeIndexValue(value, BlockOrigin(path, index_offset));
}

// Walks the index block and, for each entry, the data block it names. A data
// block that cannot be read ends the iteration with that status: skipping it
// would silently hide keys.
class TwoLevelIterator final : public InternalIterator {
 public:
  TwoLevelIterator(const Table* table, const TableReadOptions& ro,
                   std::unique_ptr<InternalIterator> index, std::string index_origin)
      : table_(table),
        ro_(ro),
        index_(std::move(index)),
        index_origin_(std::move(index_origin)),
        readahead_(ro.readahead_size) {}

  bool Valid() const override { return data_ != nullptr && data_->Valid(); }
  std::string_view key() const override { return data_->key(); }
  std::string_view value() const override { return data_->value(); }
  absl::Status status() const override {
    if (!index_->status().ok()) return index_->status();
    if (!status_.ok()) return status_;
    return data_ != nullptr ? data_->status() : absl::OkStatus();
  }

  void SeekToFirst() override {
    if (!status_.ok()) return;
    index_->SeekToFirst();
    InitDataBlock();
    if (data_ != nullptr) data_->SeekToFirst();
    SkipEmptyBlocksForward();
  }

  void SeekToLast() override {
    if (!status_.ok()) return;
    index_->SeekToLast();
    InitDataBlock();
    if (data_ != nullptr) data_->SeekToLast();
    SkipEmptyBlocksBackward();
  }

  void Seek(std::string_view target) override {
    const bool index_there = std::exchange(index_at_target_, false);
    if (!status_.ok()) return;
    if (!index_there) index_->Seek(target);
    InitDataBlock();
    pending_ = nullptr;
    if (data_ != nullptr) data_->Seek(target);
    SkipEmptyBlocksForward();
  }

  void PrepareSeek(std::string_view target, SeekBatch* batch) override {
    pending_ = nullptr;
    // Compaction inputs read ahead a fixed span from their first block on.
    if (!status_.ok() || ro_.readahead_size > 0) return;
    index_->Seek(target);
    index_at_target_ = true;
    if (!index_->Valid()) return;
    absl::StatusOr<BlockHandle> handle = DecodeIndexValue(index_->value(), index_origin_);
    if (!handle.ok()) return;  // Seek reports it
    if (data_ != nullptr && *handle == handle_) return;
    if (readahead_.Holds(*handle)) return;
    pending_ = batch->Add(table_, *handle);
  }

  void SeekForPrev(std::string_view target) override {
    if (!status_.ok()) return;
    // The first block whose separator is >= target holds the answer or
    // follows it; past the last separator every key is < target.
    index_->Seek(target);
    if (!index_->Valid() && index_->status().ok()) index_->SeekToLast();
    InitDataBlock();
    if (data_ != nullptr) data_->SeekForPrev(target);
    SkipEmptyBlocksBackward();
  }

  void Next() override {
    if (!Valid()) return;
    data_->Next();
    SkipEmptyBlocksForward();
  }

  void Prev() override {
    if (!Valid()) return;
    data_->Prev();
    SkipEmptyBlocksBackward();
  }

 private:
  // Points data_ at the block the index is on (null at the index's end or on
  // error).
  void InitDataBlock() {
    if (!index_->Valid()) {
      ClearData();
      return;
    }
    absl::StatusOr<BlockHandle> handle = DecodeIndexValue(index_->value(), index_origin_);
    if (!handle.ok()) return Fail(handle.status());
    if (data_ != nullptr && *handle == handle_) return;  // already there
    absl::StatusOr<std::shared_ptr<const Block>> block =
        pending_ != nullptr && pending_->handle == *handle
            ? table_->TakeFetched(ro_, *pending_, &readahead_)
            : table_->ReadDataBlock(ro_, *handle, &readahead_);
    if (!block.ok()) return Fail(block.status());
    ClearData();
    block_ = *std::move(block);
    data_ = block_->NewIterator();
    handle_ = *handle;
  }

  // True when the caller should stop: positioned, at an end, or failed.
  bool Settled() {
    if (data_ == nullptr) return true;
    if (data_->Valid()) return true;
    if (!data_->status().ok()) {
      Fail(data_->status());
      return true;
    }
    return false;
  }

  void SkipEmptyBlocksForward() {
    while (!Settled()) {
      index_->Next();
      InitDataBlock();
      if (data_ != nullptr) data_->SeekToFirst();
    }
  }

  void SkipEmptyBlocksBackward() {
    while (!Settled()) {
      index_->Prev();
      InitDataBlock();
      if (data_ != nullptr) data_->SeekToLast();
    }
  }

  void ClearData() {
    data_.reset();
    block_.reset();
  }

  void Fail(absl::Status status) {
    if (status_.ok()) status_ = std::move(status);
    ClearData();
  }

  const Table* const table_;
  const TableReadOptions ro_;
  const std::unique_ptr<InternalIterator> index_;
  const std::string index_origin_;
  TableReadahead readahead_;
  absl::Status status_;
  std::shared_ptr<const Block> block_;  // keeps data_'s block alive
  std::unique_ptr<InternalIterator> data_;
  BlockHandle handle_;
  // From PrepareSeek to the Seek that follows it: the batch's fetch of
  // the block that Seek starts from.
  const BlockFetch* pending_ = nullptr;
  bool index_at_target_ = false;  // PrepareSeek sought the index already
};

}  // namespace

void TableReadahead::Took(const BlockHandle& handle) {
  if (handle.offset == next_offset_) {
    ++in_order_;
  } else {
    in_order_ = 1;
    next_size_ = kInitialReadahead;
  }
  next_offset_ = handle.offset + handle.size + kBlockTrailerSize;
}

absl::StatusOr<std::string> TableReadahead::Read(const io::RandomAccessFile& file,
                                                 uint64_t data_end, const BlockHandle& handle,
                                                 ReadCounters* counters) {
  CAIRN_RETURN_IF_ERROR(CheckBlockHandle(file.path(), data_end, handle));
  const size_t n = static_cast<size_t>(handle.size) + kBlockTrailerSize;
  const uint64_t end = handle.offset + n;
  if (handle.offset < buffer_offset_ || end > buffer_offset_ + buffer_.size()) {
    size_t ahead = 0;
    if (fixed_size_ > 0) {
      ahead = fixed_size_ > n ? fixed_size_ - n : 0;
    } else if (in_order_ > kReadaheadAfterBlocks) {
      ahead = next_size_;
      next_size_ = std::min(2 * next_size_, kMaxReadahead);
    }
    if (ahead == 0) return ReadBlockContents(file, data_end, handle, counters);
    // Whole aligned blocks, so an O_DIRECT file reads straight into the
    // buffer; never past the data blocks' last device block.
    const uint64_t start = io::AlignDown(handle.offset, io::kDirectIoAlignment);
    const uint64_t stop = std::min(io::AlignUp(end + ahead, io::kDirectIoAlignment),
                                   io::AlignUp(data_end, io::kDirectIoAlignment));
    const size_t len = static_cast<size_t>(stop - start);
    if (buffer_.capacity() < len) buffer_ = io::AlignedBuffer(len);
    buffer_.Clear();
    std::string_view got;
    CAIRN_RETURN_IF_ERROR(file.Read(start, len, buffer_.data(), &got));
    BumpCounter(counters, &ReadCounters::block_reads);
    BumpCounter(counters, &ReadCounters::block_bytes_read, got.size());
    if (got.data() != buffer_.data()) std::memmove(buffer_.data(), got.data(), got.size());
    buffer_.set_size(got.size());
    buffer_offset_ = start;
  }
  // A read cut short by the end of the file leaves the block short, which
  // DecodeBlockContents reports.
  const uint64_t have = buffer_offset_ + buffer_.size();
  const size_t take =
      have > handle.offset ? static_cast<size_t>(std::min<uint64_t>(n, have - handle.offset)) : 0;
  std::string raw(buffer_.data() + (handle.offset - buffer_offset_), take);
  return DecodeBlockContents(std::move(raw), file.path(), handle);
}

Table::Table(std::unique_ptr<io::RandomAccessFile> file, uint64_t file_size, uint64_t file_number,
             BlockCache* cache, ReadCounters* counters)
    : file_(std::move(file)),
      file_size_(file_size),
      file_number_(file_number),
      cache_(cache),
      counters_(counters) {}

Table::~Table() = default;

absl::StatusOr<std::unique_ptr<Table>> Table::Open(const TableOptions& options,
                                                   std::unique_ptr<io::RandomAccessFile> file,
                                                   uint64_t file_size, uint64_t file_number,
                                                   BlockCache* cache, ReadCounters* counters) {
  const std::string& path = file->path();
  if (file_size < kFooterSize) {
    return absl::DataLossError(absl::StrCat(path, ": file of ", file_size,
                                            " bytes is too short to be an SST file"));
  }
  const uint64_t footer_offset = file_size - kFooterSize;
  char footer_buf[kFooterSize];
  std::string_view footer_bytes;
  CAIRN_RETURN_IF_ERROR(file->Read(footer_offset, kFooterSize, footer_buf, &footer_bytes));
  BumpCounter(counters, &ReadCounters::block_reads);
  BumpCounter(counters, &ReadCounters::block_bytes_read, footer_bytes.size());
  Footer footer;
  CAIRN_RETURN_IF_ERROR(footer.DecodeFrom(footer_bytes, path, footer_offset));

  std::unique_ptr<Table> table(new Table(std::move(file), file_size, file_number, cache, counters));
  table->footer_ = footer;
  const io::RandomAccessFile& f = *table->file_;

  CAIRN_ASSIGN_OR_RETURN(std::string index,
                         ReadBlockContents(f, footer_offset, footer.index_handle, counters));
  CAIRN_ASSIGN_OR_RETURN(table->index_block_,
                         Block::Create(std::move(index),
                                       BlockOrigin(f.path(), footer.index_handle.offset)));

  if (footer.filter_handle.size > 0) {
    CAIRN_ASSIGN_OR_RETURN(table->filter_data_,
                           ReadBlockContents(f, footer_offset, footer.filter_handle, counters));
    CAIRN_ASSIGN_OR_RETURN(
        table->filter_, BloomFilter::Parse(table->filter_data_,
                                           BlockOrigin(f.path(), footer.filter_handle.offset)));
  }

  CAIRN_ASSIGN_OR_RETURN(std::string props,
                         ReadBlockContents(f, footer_offset, footer.properties_handle, counters));
  CAIRN_RETURN_IF_ERROR(
      table->props_.DecodeFrom(props, BlockOrigin(f.path(), footer.properties_handle.offset)));
  if (table->props_.num_range_deletions != 0) {
    const BlockHandle& h = table->props_.range_deletion_handle;
    if (footer.version < kRangeDeletionTableFormatVersion) {
      return absl::DataLossError(absl::StrCat(
          f.path(), ": SST format version ", footer.version,
          " holds no range-deletion block, but its properties name one"));
    }
    CAIRN_ASSIGN_OR_RETURN(std::string block, ReadBlockContents(f, footer_offset, h, counters));
    CAIRN_ASSIGN_OR_RETURN(table->range_tombstone_list_,
                           DecodeRangeDeletionBlock(block, BlockOrigin(f.path(), h.offset)));
    if (table->range_tombstone_list_.size() != table->props_.num_range_deletions) {
      return absl::DataLossError(absl::StrCat(
          BlockOrigin(f.path(), h.offset), ": range-deletion block holds ",
          table->range_tombstone_list_.size(), " tombstones; the properties claim ",
          table->props_.num_range_deletions));
    }
    table->range_tombstones_ =
        std::make_shared<const FragmentedRangeTombstones>(table->range_tombstone_list_);
  }
  if (footer.version == kExpiryTableFormatVersion && options.on_expiring_table) {
    options.on_expiring_table();
  }
  return table;
}

absl::StatusOr<std::shared_ptr<const Block>> Table::ReadDataBlock(
    const TableReadOptions& ro, const BlockHandle& handle, TableReadahead* readahead) const {
  if (readahead != nullptr) readahead->Took(handle);
  if (cache_ != nullptr) {
    if (std::shared_ptr<const Block> hit = cache_->Lookup(file_number_, handle.offset)) {
      BumpCounter(counters_, &ReadCounters::block_cache_hits);
      return hit;
    }
  }
  BumpCounter(counters_, &ReadCounters::block_cache_misses);
  const uint64_t data_end = file_size_ - kFooterSize;
  CAIRN_ASSIGN_OR_RETURN(std::string contents,
                         readahead != nullptr
                             ? readahead->Read(*file_, data_end, handle, counters_)
                             : ReadBlockContents(*file_, data_end, handle, counters_));
  CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<const Block> block,
                         Block::Create(std::move(contents), BlockOrigin(path(), handle.offset)));
  if (cache_ != nullptr && ro.fill_cache) {
    cache_->Insert(file_number_, handle.offset, block, block->size());
  }
  return block;
}

void Table::StartFetch(BlockFetch* fetch) const {
  if (cache_ != nullptr) {
    if (std::shared_ptr<const Block> hit = cache_->Lookup(file_number_, fetch->handle.offset)) {
      fetch->cached = true;
      fetch->block = std::move(hit);
      return;
    }
  }
  fetch->status = CheckBlockHandle(path(), file_size_ - kFooterSize, fetch->handle);
  if (!fetch->status.ok()) return;
  fetch->buf.resize(static_cast<size_t>(fetch->handle.size) + kBlockTrailerSize);
  fetch->request.offset = fetch->handle.offset;
  fetch->request.len = fetch->buf.size();
  fetch->request.buf = fetch->buf.data();
}

void Table::FinishFetch(BlockFetch* fetch) const {
  if (!fetch->request.status.ok()) {
    fetch->status = fetch->request.status;
    return;
  }
  BumpCounter(counters_, &ReadCounters::block_reads);
  BumpCounter(counters_, &ReadCounters::block_bytes_read, fetch->request.result);
  fetch->buf.resize(fetch->request.result);
  absl::StatusOr<std::string> contents =
      DecodeBlockContents(std::move(fetch->buf), path(), fetch->handle);
  if (!contents.ok()) {
    fetch->status = contents.status();
    return;
  }
  absl::StatusOr<std::shared_ptr<const Block>> block =
      Block::Create(*std::move(contents), BlockOrigin(path(), fetch->handle.offset));
  if (!block.ok()) {
    fetch->status = block.status();
    return;
  }
  fetch->block = *std::move(block);
}

absl::StatusOr<std::shared_ptr<const Block>> Table::TakeFetched(const TableReadOptions& ro,
                                                                const BlockFetch& fetch,
                                                                TableReadahead* readahead) const {
  if (readahead != nullptr) readahead->Took(fetch.handle);
  if (fetch.cached) {
    BumpCounter(counters_, &ReadCounters::block_cache_hits);
    return fetch.block;
  }
  BumpCounter(counters_, &ReadCounters::block_cache_misses);
  CAIRN_RETURN_IF_ERROR(fetch.status);
  if (cache_ != nullptr && ro.fill_cache) {
    cache_->Insert(file_number_, fetch.handle.offset, fetch.block, fetch.block->size());
  }
  return fetch.block;
}

bool Table::AddGetRead(const TableReadOptions& ro, std::string_view lookup_key,
                       SeekBatch* batch) const {
  ParsedInternalKey target;
  if (!ParseInternalKey(lookup_key, &target)) return true;  // Get reports it
  if (filter_.has_value() && !ro.skip_filter && !filter_->KeyMayMatch(target.user_key)) {
    return false;
  }
  if (cache_ == nullptr || !ro.fill_cache) return true;
  std::unique_ptr<InternalIterator> index = index_block_->NewIterator();
  index->Seek(lookup_key);
  if (!index->Valid()) return !index->status().ok();
  absl::StatusOr<BlockHandle> handle =
      DecodeIndexValue(index->value(), path(), footer_.index_handle.offset);
  if (handle.ok()) batch->Add(this, *handle);  // else the Get reports it
  return true;
}

void Table::CacheFetched(const BlockFetch& fetch) const {
  BumpCounter(counters_, &ReadCounters::block_cache_misses);
  if (cache_ != nullptr) {
    cache_->Insert(file_number_, fetch.handle.offset, fetch.block, fetch.block->size());
  }
}

absl::Status Table::Get(const TableReadOptions& ro, std::string_view lookup_key,
                        TableGetResult* result) const {
  *result = TableGetResult();
  ParsedInternalKey target;
  if (!ParseInternalKey(lookup_key, &target)) {
    return absl::InvalidArgumentError("Table::Get: malformed lookup key");
  }
  if (filter_.has_value() && !ro.skip_filter) {
    BumpCounter(counters_, &ReadCounters::bloom_probes);
    if (!filter_->KeyMayMatch(target.user_key)) {
      BumpCounter(counters_, &ReadCounters::bloom_rejections);
      return absl::OkStatus();
    }
  }

  std::unique_ptr<InternalIterator> index = index_block_->NewIterator();
  // Normally the first block whose separator is >= the lookup key decides;
  // the loop only moves on if that block holds nothing >= it.
  for (index->Seek(lookup_key); index->Valid(); index->Next()) {
    CAIRN_ASSIGN_OR_RETURN(BlockHandle handle,
                           DecodeIndexValue(index->value(), path(), footer_.index_handle.offset));
    std::shared_ptr<const Block> block;
    if (ro.cache_only) {
      if (cache_ != nullptr) block = cache_->Lookup(file_number_, handle.offset);
      if (block == nullptr) {
        result->needs_read = true;
        return absl::OkStatus();
      }
      BumpCounter(counters_, &ReadCounters::block_cache_hits);
    } else {
      CAIRN_ASSIGN_OR_RETURN(block, ReadDataBlock(ro, handle));
    }
    std::unique_ptr<InternalIterator> it = block->NewIterator();
    it->Seek(lookup_key);
    CAIRN_RETURN_IF_ERROR(it->status());
    if (!it->Valid()) continue;
    ParsedInternalKey found;
    if (ParseInternalKey(it->key(), &found) && found.user_key == target.user_key) {
      result->found = true;
      result->type = found.type;
      result->sequence = found.sequence;
      if (found.type != ValueType::kDeletion) result->value.assign(it->value());
    }
    break;
  }
  CAIRN_RETURN_IF_ERROR(index->status());
  if (filter_.has_value() && !result->found) {
    BumpCounter(counters_, &ReadCounters::bloom_false_positives);
  }
  return absl::OkStatus();
}

absl::Status Table::VerifyAll() const {
  const uint64_t data_end = file_size_ - kFooterSize;
  // The index, filter and properties were checked at Open; read them again
  // from the device in case the file changed since.
  for (const BlockHandle* h :
       {&footer_.index_handle, &footer_.filter_handle, &footer_.properties_handle}) {
    if (h == &footer_.filter_handle && h->size == 0) continue;
    CAIRN_RETURN_IF_ERROR(ReadBlockContents(*file_, data_end, *h, nullptr).status());
  }

  std::unique_ptr<InternalIterator> index = index_block_->NewIterator();
  std::string prev_key, prev_separator;
  uint64_t expected_offset = 0, entries = 0, deletions = 0, blocks = 0;
  for (index->SeekToFirst(); index->Valid(); index->Next()) {
    CAIRN_ASSIGN_OR_RETURN(BlockHandle handle,
                           DecodeIndexValue(index->value(), path(), footer_.index_handle.offset));
    const std::string origin = BlockOrigin(path(), handle.offset);
    auto bad = [&](absl::string_view what) {
      return absl::DataLossError(absl::StrCat(origin, ": ", what));
    };
    // Data blocks are laid end to end from offset 0.
    if (handle.offset != expected_offset) {
      return bad(absl::StrCat("data block expected at offset ", expected_offset));
    }
    CAIRN_ASSIGN_OR_RETURN(std::string contents,
                           ReadBlockContents(*file_, data_end, handle, nullptr));
    CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<const Block> block,
                           Block::Create(std::move(contents), origin));
    std::unique_ptr<InternalIterator> it = block->NewIterator();
    uint64_t in_block = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++in_block) {
      if (entries > 0 && CompareInternalKeys(prev_key, it->key()) >= 0) {
        return bad(absl::StrCat("key of entry ", in_block, " is not above the previous key"));
      }
      if (blocks > 0 && in_block == 0 && CompareInternalKeys(prev_separator, it->key()) >= 0) {
        return bad("first key is not above the previous index separator");
      }
      if (CompareInternalKeys(it->key(), index->key()) > 0) {
        return bad(absl::StrCat("key of entry ", in_block, " is above the index separator"));
      }
      ParsedInternalKey parsed;
      ParseInternalKey(it->key(), &parsed);
      if (parsed.type == ValueType::kDeletion) ++deletions;
      prev_key.assign(it->key());
      ++entries;
    }
    CAIRN_RETURN_IF_ERROR(it->status());
    if (in_block == 0) return bad("empty data block");
    prev_separator.assign(index->key());
    expected_offset = handle.offset + handle.size + kBlockTrailerSize;
    ++blocks;
  }
  CAIRN_RETURN_IF_ERROR(index->status());

  uint64_t meta_start = std::min(footer_.index_handle.offset, footer_.properties_handle.offset);
  if (footer_.filter_handle.size > 0) meta_start = std::min(meta_start, footer_.filter_handle.offset);
  if (props_.num_range_deletions > 0) {
    meta_start = std::min(meta_start, props_.range_deletion_handle.offset);
  }
  if (expected_offset != meta_start) {
    return absl::DataLossError(absl::StrCat(path(), ": data blocks end at offset ",
                                            expected_offset, " but meta blocks start at ",
                                            meta_start));
  }
  if (entries != props_.num_entries || deletions != props_.num_deletions ||
      blocks != props_.num_data_blocks) {
    return absl::DataLossError(absl::StrCat(
        BlockOrigin(path(), footer_.properties_handle.offset), ": properties claim ",
        props_.num_entries, " entries, ", props_.num_deletions, " deletions, ",
        props_.num_data_blocks, " blocks; the data holds ", entries, ", ", deletions, ", ",
        blocks));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<BlockHandle>> Table::DataBlockHandles() const {
  std::vector<BlockHandle> handles;
  std::unique_ptr<InternalIterator> index = index_block_->NewIterator();
  for (index->SeekToFirst(); index->Valid(); index->Next()) {
    CAIRN_ASSIGN_OR_RETURN(BlockHandle handle,
                           DecodeIndexValue(index->value(), path(), footer_.index_handle.offset));
    handles.push_back(handle);
  }
  CAIRN_RETURN_IF_ERROR(index->status());
  return handles;
}

std::vector<std::string> Table::SampleIndexKeys(size_t count) const {
  std::vector<std::string> keys;
  if (count == 0) return keys;
  const uint64_t step = std::max<uint64_t>(1, props_.num_data_blocks / count);
  std::unique_ptr<InternalIterator> index = index_block_->NewIterator();
  uint64_t i = 0;
  for (index->SeekToFirst(); index->Valid(); index->Next(), ++i) {
    if (i % step == step - 1) keys.emplace_back(index->key());
  }
  return keys;
}

uint64_t Table::DataEnd() const {
  // The blocks after the data, in file order: filter (if any), properties.
  return std::min(file_size_,
                  has_filter() ? footer_.filter_handle.offset : footer_.properties_handle.offset);
}

namespace {

// Where key lies between lo and hi (0 at or below lo, 1 at or above hi),
// reading the 8 bytes past their common prefix as a fraction.
double KeyShare(std::string_view lo, std::string_view hi, std::string_view key) {
  if (key <= lo) return 0;
  if (key >= hi) return 1;
  size_t common = 0;
  while (common < lo.size() && common < hi.size() && lo[common] == hi[common]) ++common;
  auto number = [common](std::string_view s) {
    double v = 0, scale = 1;
    for (size_t i = common; i < common + 8; ++i) {
      scale /= 256;
      v += scale * (i < s.size() ? static_cast<unsigned char>(s[i]) : 0);
    }
    return v;
  };
  const double a = number(lo), b = number(hi);
  if (b <= a) return 0.5;
  return std::clamp((number(key) - a) / (b - a), 0.0, 1.0);
}

}  // namespace

double Table::InterpolatedOffsetOf(std::string_view user_key,
                                   std::string_view smallest_user_key) const {
  const uint64_t data_end = DataEnd();
  std::unique_ptr<InternalIterator> index = index_block_->NewIterator();
  index->Seek(MakeLookupKey(user_key, kMaxSequenceNumber));
  if (!index->Valid() || index->key().size() < 8) return data_end;
  BlockHandle handle;
  std::string_view value = index->value();
  if (!handle.DecodeVarintFrom(&value)) return data_end;
  const std::string upper(ExtractUserKey(index->key()));
  std::string lower(smallest_user_key);
  index->Prev();
  if (index->Valid() && index->key().size() >= 8) {
    lower.assign(ExtractUserKey(index->key()));
  }
  const double begin = static_cast<double>(std::min(handle.offset, data_end));
  const double end = static_cast<double>(
      std::min<uint64_t>(handle.offset + handle.size + kBlockTrailerSize, data_end));
  return begin + KeyShare(lower, upper, user_key) * std::max(0.0, end - begin);
}

uint64_t Table::ApproximateOffsetOf(std::string_view internal_key) const {
  const uint64_t data_end = DataEnd();
  std::unique_ptr<InternalIterator> index = index_block_->NewIterator();
  index->Seek(internal_key);
  if (!index->Valid()) return data_end;
  BlockHandle handle;
  std::string_view value = index->value();
  if (!handle.DecodeVarintFrom(&value)) return data_end;
  return std::min(handle.offset, data_end);
}

std::unique_ptr<InternalIterator> Table::NewIterator(const TableReadOptions& ro) const {
  return std::make_unique<TwoLevelIterator>(this, ro, index_block_->NewIterator(),
                                            BlockOrigin(path(), footer_.index_handle.offset));
}

}  // namespace cairn::lsm

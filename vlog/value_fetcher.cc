// ValueLogFetcher is the ValueLog's ValueFetcher: the value reads of one
// iterator, kept in flight on an io::ReadQueue of its own while the scan
// consumes values read earlier. Each fetch holds the segment's reader, so a
// segment that GC deletes meanwhile stays readable through the open file.
#include <algorithm>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "io/aligned_buffer.h"
#include "vlog/value_log.h"
#include "io/status_macros.h"

namespace cairn::vlog {

class ValueLogFetcher final : public ValueFetcher {
 public:
  ValueLogFetcher(ValueLog* vlog, std::unique_ptr<io::ReadQueue> queue, bool fill_cache)
      : vlog_(vlog), fill_cache_(fill_cache), queue_(std::move(queue)) {}
  ~ValueLogFetcher() override {
    // Every fetch goes now, so no read is still wanted.
    for (auto& [stored, fetch] : fetches_) {
      if (fetch->read == nullptr || fetch->read->complete) continue;
      queue_->Forget(&fetch->read->request);
      dropped_.push_back(std::move(fetch));
    }
    ReapDropped();
    if (dropped_.empty()) return;
    // Reads still in flight go to the value log with their buffers and
    // the queue, so that the iterator's end does not wait for them.
    vlog_->Retire(std::make_unique<Leftovers>(std::move(queue_), std::move(dropped_)));
  }

  void Start(absl::Span<const std::string_view> keys,
             absl::Span<const std::string_view> stored,
             absl::Span<const uint64_t> readahead) override {
    ReapDropped();
    std::vector<Fetch*> to_read;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (fetches_.contains(AsKey(stored[i]))) continue;
      std::unique_ptr<Fetch> fetch = NewFetch();
      fetch->key.assign(keys[i]);
      absl::StatusOr<vlog::ValuePointer> ptr = vlog::DecodeValuePointer(stored[i]);
      if (!ptr.ok()) {
        fetch->status = ptr.status();
      } else {
        fetch->ptr = *ptr;
        fetch->readahead = i < readahead.size() ? readahead[i] : 0;
        if (Prepare(fetch.get())) {
          if (std::shared_ptr<Read> read = CoveringRead(fetch->ptr)) {
            fetch->read = std::move(read);
          } else {
            to_read.push_back(fetch.get());
          }
        }
      }
      fetches_.emplace(std::string(stored[i]), std::move(fetch));
    }
    SubmitCoalesced(&to_read);
  }

  bool Covered(const vlog::ValuePointer& ptr) const override {
    return CoveringRead(ptr) != nullptr;
  }

  bool Started(std::string_view stored) const override { return fetches_.contains(AsKey(stored)); }

  bool KnownInKeyOrder(uint64_t segment_id) const override {
    return vlog_->key_order_hints_.Contains(segment_id);
  }
  void NoteInKeyOrder(uint64_t segment_id) override { vlog_->key_order_hints_.Add(segment_id); }
  void ForgetKeyOrder(uint64_t segment_id) override {
    vlog_->key_order_hints_.Remove(segment_id);
  }

  absl::Status Take(std::string_view stored, std::string* value) override {
    std::string_view view;
    std::shared_ptr<const void> pin;
    absl::Status s = TakeView(stored, &view, &pin);
    value->assign(view);
    return s;
  }

  absl::Status TakeView(std::string_view stored, std::string_view* value,
                        std::shared_ptr<const void>* pin) override {
    *value = {};
    pin->reset();
    auto it = fetches_.find(AsKey(stored));
    if (it == fetches_.end()) {
      return absl::NotFoundError(absl::StrCat("value fetch: pointer not started"));
    }
    std::unique_ptr<Fetch> fetch = std::move(it->second);
    fetches_.erase(it);
    if (fetch->read != nullptr) Finish(fetch.get());
    if (fetch->deferred) ReadNow(fetch.get());
    absl::Status s = std::move(fetch->status);
    if (!s.ok()) {
      Recycle(std::move(fetch));
      return s;
    }
    *value = fetch->view;
    *pin = std::move(fetch->pin);
    Recycle(std::move(fetch));
    return absl::OkStatus();
  }

  void Drop(std::string_view stored) override {
    auto it = fetches_.find(AsKey(stored));
    if (it == fetches_.end()) return;
    std::unique_ptr<Fetch> fetch = std::move(it->second);
    fetches_.erase(it);
    if (fetch->read == nullptr || fetch->read->complete) {
      Recycle(std::move(fetch));
      return;
    }
    // A read no other fetch shares need not be made; one in flight keeps
    // its buffer until it completes.
    if (fetch->read.use_count() == 1) queue_->Forget(&fetch->read->request);
    if (!Poll(queue_.get(), fetch->read.get())) dropped_.push_back(std::move(fetch));
  }

  size_t pending() const override { return fetches_.size(); }

 private:
  // Debian's abseil has its own string_view, which the map's lookups take.
  static absl::string_view AsKey(std::string_view s) { return {s.data(), s.size()}; }

  // One device read, serving one fetch or several whose records lie next
  // to each other in a segment (values a GC wrote in key order, or written
  // in key order in the first place).
  struct Read {
    io::ReadRequest request;
    io::AlignedBuffer buf;  // request.len bytes
    bool complete = false;
  };

  struct Fetch {
    std::string key;
    vlog::ValuePointer ptr;
    std::shared_ptr<const vlog::SegmentReader> reader;
    std::shared_ptr<Read> read;  // null once done (a cache hit, an error)
    uint64_t readahead = 0;      // bytes a read starting at its record covers
    // Started while the descriptor budget was spent: no reader, read when
    // taken (ReadNow).
    bool deferred = false;
    // Once done (a cache hit, or its read decoded): the value, which pin
    // holds (the value cache's copy, the read's buffer, or the value
    // decompressed). Never copied before it is taken: a scan that ends
    // leaves started fetches behind, and copying each cache hit at Start
    // cost a cached 50-entry scan half its speed.
    std::string_view view;
    std::shared_ptr<const void> pin;
    absl::Status status;
  };

  // A fetch, from those used before where there is one: a scan starts
  // one per value, and their allocations (the fetch and its key) were a
  // tenth of a scan's CPU.
  std::unique_ptr<Fetch> NewFetch() {
    if (free_.empty()) return std::make_unique<Fetch>();
    std::unique_ptr<Fetch> fetch = std::move(free_.back());
    free_.pop_back();
    return fetch;
  }
  void Recycle(std::unique_ptr<Fetch> fetch) {
    if (free_.size() >= kMaxFreeFetches) return;
    fetch->ptr = {};
    fetch->reader.reset();
    fetch->read.reset();
    fetch->view = {};
    fetch->pin.reset();
    fetch->readahead = 0;
    fetch->deferred = false;
    fetch->status = absl::OkStatus();
    free_.push_back(std::move(fetch));
  }
  static constexpr size_t kMaxFreeFetches = 64;

  // A value cache hit (or a bad pointer) is done at once: false. Otherwise
  // fetch gets its segment's reader and needs a read: true.
  bool Prepare(Fetch* fetch) {
    if (std::shared_ptr<const std::string> hit =
            vlog_->cache_.Lookup(fetch->ptr.segment_id, fetch->ptr.offset)) {
      fetch->view = *hit;
      fetch->pin = std::move(hit);
      return false;
    }
    // A read ahead never waits for a descriptor, nor fails the scan for
    // want of one: past the budget the value is read when taken, by which
    // time the values taken before it have let their readers go.
    absl::StatusOr<std::shared_ptr<const vlog::SegmentReader>> reader =
        vlog_->readers_.Get(fetch->ptr.segment_id, /*wait=*/false);
    if (io::IsFdShortage(reader.status())) {
      fetch->deferred = true;
      return false;
    }
    if (!reader.ok()) {
      fetch->status = reader.status();
      return false;
    }
    fetch->status = (*reader)->CheckPointer(fetch->ptr);
    if (!fetch->status.ok()) return false;
    fetch->reader = *std::move(reader);
    return true;
  }

  // The latest read of ptr's segment when it holds ptr's record (read, or
  // in flight: every record an iterator can see was in the file before its
  // fetcher made any read, so a read covers the records in its range).
  std::shared_ptr<Read> CoveringRead(const vlog::ValuePointer& ptr) const {
    auto it = last_read_.find(ptr.segment_id);
    if (it == last_read_.end()) return nullptr;
    const Read& r = *it->second;
    const uint64_t end = r.request.offset + (r.complete ? r.request.result : r.request.len);
    if (ptr.offset < r.request.offset || ptr.offset + ptr.size > end) return nullptr;
    return it->second;
  }

  // Submits the reads of fetches, records that neighbour each other in one
  // segment merged into one read, each read covering at least the readahead
  // of each of its fetches (at most kMaxMergedFetch) and widened to whole
  // blocks (to the file's read granularity when none reads ahead); the last read of
  // each segment is kept for the records that follow (CoveringRead).
  void SubmitCoalesced(std::vector<Fetch*>* fetches) {
    if (fetches->empty()) return;
    std::sort(fetches->begin(), fetches->end(), [](const Fetch* a, const Fetch* b) {
      return std::pair(a->ptr.segment_id, a->ptr.offset) <
             std::pair(b->ptr.segment_id, b->ptr.offset);
    });
    std::vector<std::shared_ptr<Read>> reads;
    std::vector<io::FileReadRequest> batch;
    size_t first = 0;
    while (first < fetches->size()) {
      const vlog::ValuePointer& start = (*fetches)[first]->ptr;
      const uint64_t readahead = (*fetches)[first]->readahead;
      bool reads_ahead = readahead > 0;
      uint64_t end = start.offset + std::max<uint64_t>(
                                        start.size, std::min(readahead, kMaxMergedFetch));
      size_t last = first + 1;
      for (; last < fetches->size(); ++last) {
        const Fetch& f = *(*fetches)[last];
        const vlog::ValuePointer& p = f.ptr;
        if (p.segment_id != start.segment_id || p.offset > end + kMaxFetchGap ||
            p.offset + p.size - start.offset > kMaxMergedFetch) {
          break;
        }
        // A record that joins the read brings its readahead with it (the
        // caller asks for one once the records it reads lie in a row),
        // counted from the read's start.
        end = std::max({end, p.offset + p.size,
                        start.offset + std::min(f.readahead, kMaxMergedFetch)});
        reads_ahead = reads_ahead || f.readahead > 0;
      }
      auto read = std::make_shared<Read>();
      // Into an aligned buffer, which the file reads straight into (no
      // bounce buffer, no copy). A read that reads ahead (its records lie
      // in key order) covers whole 4 KiB blocks: an O_DIRECT read costs
      // about the same, and the records that share its first and last
      // blocks need no read of their own (CoveringRead). A read that does
      // not (values at random places, 16 KiB and up written as they came)
      // covers only the file's read granularity (512 bytes here): its
      // neighbours are other keys' values, and whole blocks cost 14% more
      // device bytes at 16 KiB (docs/decisions/20261203_direct_read_alignment.md).
      const uint64_t align =
          reads_ahead ? io::kDirectIoAlignment
                      : std::max<uint64_t>(1, (*fetches)[first]->reader->file()->read_alignment());
      read->request.offset = io::AlignDown(start.offset, align);
      read->request.len = io::AlignUp(end, align) - read->request.offset;
      read->buf = io::AlignedBuffer(read->request.len);  // not zeroed: the device fills it
      read->request.buf = read->buf.data();
      for (size_t i = first; i < last; ++i) (*fetches)[i]->read = read;
      batch.push_back({(*fetches)[first]->reader->file(), &read->request});
      if (last_read_.size() >= kMaxLastReads && !last_read_.contains(start.segment_id)) {
        last_read_.erase(last_read_.begin());
      }
      last_read_[start.segment_id] = read;
      reads.push_back(std::move(read));
      first = last;
    }
    queue_->Submit(batch);
  }
  // Segments whose last read is kept (a scan over values of many flushes
  // interleaves that many segments); each holds at most kMaxMergedFetch.
  static constexpr size_t kMaxLastReads = 16;

  // Waits for fetch's read, then checks and decodes its record where it
  // lies in the read's buffer; the value cache gets a copy of the value.
  void Finish(Fetch* fetch) {
    std::shared_ptr<Read> read = std::move(fetch->read);
    if (!read->complete) {
      queue_->Wait(&read->request);
      read->complete = true;
    }
    fetch->status = read->request.status;
    if (!fetch->status.ok()) return;
    // The record's part of the read (cut short where the read was).
    const uint64_t skip = fetch->ptr.offset - read->request.offset;
    const uint64_t got = read->request.result > skip
                             ? std::min<uint64_t>(fetch->ptr.size, read->request.result - skip)
                             : 0;
    std::string_view value;
    std::string decompressed;
    fetch->status = fetch->reader->DecodeView(
        fetch->ptr, fetch->key, std::string_view(read->buf.data() + skip, got), &value,
        &decompressed);
    if (!fetch->status.ok()) return;
    // Shown from the decompressed value or the cache's copy where there is
    // one, else from the read's buffer.
    std::shared_ptr<const std::string> owned;
    const bool cached = fill_cache_ && vlog_->cache_.capacity() > 0;
    if (value.data() == decompressed.data()) {
      owned = std::make_shared<const std::string>(std::move(decompressed));
    } else if (cached) {
      std::shared_ptr<std::string> copy = ValueCache::NewValue(value.size());
      copy->assign(value);
      owned = std::move(copy);
    }
    if (owned == nullptr) {
      fetch->view = value;
      fetch->pin = std::move(read);
      return;
    }
    if (cached) vlog_->cache_.Insert(fetch->ptr.segment_id, fetch->ptr.offset, owned);
    fetch->view = *owned;
    fetch->pin = std::move(owned);
  }

  // A deferred fetch's value, read now as a Get reads it.
  void ReadNow(Fetch* fetch) {
    auto owned = std::make_shared<std::string>();
    fetch->status = vlog_->readers_.Read(fetch->ptr, fetch->key, owned.get());
    if (!fetch->status.ok()) return;
    fetch->view = *owned;
    fetch->pin = std::move(owned);
  }

  static bool Poll(io::ReadQueue* queue, Read* read) {
    if (!read->complete && queue->Poll(&read->request)) read->complete = true;
    return read->complete;
  }

  // Frees the fetches whose reads have completed.
  static void Reap(io::ReadQueue* queue, std::deque<std::unique_ptr<Fetch>>* fetches) {
    std::erase_if(*fetches,
                  [queue](const std::unique_ptr<Fetch>& f) { return Poll(queue, f->read.get()); });
  }
  void ReapDropped() { Reap(queue_.get(), &dropped_); }

  // Dropped fetches and their queue, outliving the fetcher.
  class Leftovers final : public ValueLog::InFlightReads {
   public:
    Leftovers(std::unique_ptr<io::ReadQueue> queue, std::deque<std::unique_ptr<Fetch>> fetches)
        : fetches_(std::move(fetches)), queue_(std::move(queue)) {}
    ~Leftovers() override { queue_.reset(); }  // waits before the buffers go
    bool Done() override {
      Reap(queue_.get(), &fetches_);
      return fetches_.empty();
    }

   private:
    std::deque<std::unique_ptr<Fetch>> fetches_;
    std::unique_ptr<io::ReadQueue> queue_;
  };

  ValueLog* const vlog_;
  const bool fill_cache_;  // values read go into the value cache
  absl::flat_hash_map<std::string, std::unique_ptr<Fetch>> fetches_;  // by pointer bytes
  std::deque<std::unique_ptr<Fetch>> dropped_;                        // reads still in flight
  std::vector<std::unique_ptr<Fetch>> free_;                          // NewFetch, Recycle
  // Per segment, its latest read (CoveringRead). Declared before queue_,
  // which (destroyed first) waits for any read still in flight.
  absl::flat_hash_map<uint64_t, std::shared_ptr<Read>> last_read_;
  std::unique_ptr<io::ReadQueue> queue_;
};

std::shared_ptr<const std::string> ValueLog::CachedValue(std::string_view stored) {
  absl::StatusOr<vlog::ValuePointer> ptr = vlog::DecodeValuePointer(stored);
  if (!ptr.ok()) return nullptr;
  return cache_.Lookup(ptr->segment_id, ptr->offset, /*count_miss=*/false);
}

void ValueLog::Retire(std::unique_ptr<InFlightReads> reads) {
  absl::MutexLock l(&retired_mu_);
  retired_.push_back(std::move(reads));
}

std::unique_ptr<ValueFetcher> ValueLog::NewFetcher(bool fill_cache) {
  {
    absl::MutexLock l(&retired_mu_);
    std::erase_if(retired_, [](const std::unique_ptr<InFlightReads>& r) { return r->Done(); });
  }
  return std::make_unique<ValueLogFetcher>(this, fs_->NewReadQueue(), fill_cache);
}

}  // namespace cairn::vlog

// ValueLogFetcher is the ValueLog's ValueFetcher: the value reads of one
// iterator, kept in flight on an io::ReadQueue of its own while the scan
// consumes values read earlier. Each fetch holds the segment's reader, so a
// segment that GC deletes meanwhile stays readable through the open file.
#include <deque>
#include <vector>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/value_log.h"
#include "io/status_macros.h"

namespace cairn {

class ValueLogFetcher final : public ValueFetcher {
 public:
  ValueLogFetcher(ValueLog* vlog, std::unique_ptr<io::ReadQueue> queue)
      : vlog_(vlog), queue_(std::move(queue)) {}
  ~ValueLogFetcher() override {
    for (auto& [stored, fetch] : fetches_) {
      if (fetch->reader == nullptr) continue;
      queue_->Forget(&fetch->request);
      dropped_.push_back(std::move(fetch));
    }
    ReapDropped();
    if (dropped_.empty()) return;
    // Reads still in flight go to the value log with their buffers and
    // the queue, so that the iterator's end does not wait for them.
    vlog_->Retire(std::make_unique<Leftovers>(std::move(queue_), std::move(dropped_)));
  }

  void Start(absl::Span<const std::string_view> keys,
             absl::Span<const std::string_view> stored) override {
    ReapDropped();
    std::vector<io::FileReadRequest> batch;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (fetches_.contains(AsKey(stored[i]))) continue;
      auto fetch = std::make_unique<Fetch>();
      fetch->key.assign(keys[i]);
      absl::StatusOr<vlog::ValuePointer> ptr = vlog::DecodeValuePointer(stored[i]);
      if (!ptr.ok()) {
        fetch->status = ptr.status();
      } else {
        fetch->ptr = *ptr;
        Prepare(fetch.get(), &batch);
      }
      fetches_.emplace(std::string(stored[i]), std::move(fetch));
    }
    if (!batch.empty()) queue_->Submit(batch);
  }

  bool Started(std::string_view stored) const override { return fetches_.contains(AsKey(stored)); }

  absl::Status Take(std::string_view stored, std::string* value) override {
    auto it = fetches_.find(AsKey(stored));
    if (it == fetches_.end()) {
      return absl::NotFoundError(absl::StrCat("value fetch: pointer not started"));
    }
    std::unique_ptr<Fetch> fetch = std::move(it->second);
    fetches_.erase(it);
    if (fetch->reader != nullptr) {
      queue_->Wait(&fetch->request);
      fetch->status = fetch->reader->FinishRead(fetch->ptr, fetch->key, fetch->request, &fetch->value);
      if (fetch->status.ok() && vlog_->cache_.capacity() > 0) {
        vlog_->cache_.Insert(fetch->ptr.segment_id, fetch->ptr.offset,
                             std::make_shared<const std::string>(fetch->value));
      }
    }
    if (!fetch->status.ok()) {
      value->clear();
      return fetch->status;
    }
    *value = std::move(fetch->value);
    return absl::OkStatus();
  }

  void Drop(std::string_view stored) override {
    auto it = fetches_.find(AsKey(stored));
    if (it == fetches_.end()) return;
    std::unique_ptr<Fetch> fetch = std::move(it->second);
    fetches_.erase(it);
    // Its buffer must outlive its read.
    if (fetch->reader == nullptr) return;
    queue_->Forget(&fetch->request);
    if (!queue_->Poll(&fetch->request)) {
      dropped_.push_back(std::move(fetch));
    }
  }

  size_t pending() const override { return fetches_.size(); }

 private:
  // Debian's abseil has its own string_view, which the map's lookups take.
  static absl::string_view AsKey(std::string_view s) { return {s.data(), s.size()}; }

  struct Fetch {
    std::string key;
    vlog::ValuePointer ptr;
    std::shared_ptr<const vlog::SegmentReader> reader;  // set while a read is due
    io::ReadRequest request;
    std::string value;  // the record while in flight, then the value
    absl::Status status;
  };

  // A value cache hit is done at once; otherwise the record's read is added
  // to batch.
  void Prepare(Fetch* fetch, std::vector<io::FileReadRequest>* batch) {
    if (std::shared_ptr<const std::string> hit =
            vlog_->cache_.Lookup(fetch->ptr.segment_id, fetch->ptr.offset)) {
      fetch->value = *hit;
      return;
    }
    absl::StatusOr<std::shared_ptr<const vlog::SegmentReader>> reader =
        vlog_->readers_.Get(fetch->ptr.segment_id);
    if (!reader.ok()) {
      fetch->status = reader.status();
      return;
    }
    fetch->status = (*reader)->PrepareRead(fetch->ptr, &fetch->value, &fetch->request);
    if (!fetch->status.ok()) return;
    fetch->reader = *std::move(reader);
    batch->push_back({fetch->reader->file(), &fetch->request});
  }

  // Frees the fetches whose reads have completed.
  static void Reap(io::ReadQueue* queue, std::deque<std::unique_ptr<Fetch>>* fetches) {
    std::erase_if(*fetches,
                  [queue](const std::unique_ptr<Fetch>& f) { return queue->Poll(&f->request); });
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
  absl::flat_hash_map<std::string, std::unique_ptr<Fetch>> fetches_;  // by pointer bytes
  std::deque<std::unique_ptr<Fetch>> dropped_;                        // reads still in flight
  std::unique_ptr<io::ReadQueue> queue_;
};

void ValueLog::Retire(std::unique_ptr<InFlightReads> reads) {
  absl::MutexLock l(&retired_mu_);
  retired_.push_back(std::move(reads));
}

std::unique_ptr<ValueFetcher> ValueLog::NewFetcher() {
  {
    absl::MutexLock l(&retired_mu_);
    std::erase_if(retired_, [](const std::unique_ptr<InFlightReads>& r) { return r->Done(); });
  }
  return std::make_unique<ValueLogFetcher>(this, fs_->NewReadQueue());
}

}  // namespace cairn

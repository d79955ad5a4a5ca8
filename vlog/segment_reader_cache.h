// SegmentReaderCache keeps one open SegmentReader per value-log segment,
// opening each lazily on first use, and reads values through pointers that
// may name any segment. It is the value log's read side for the DB's Get,
// MultiGet and iterators.
//
// Readers are handed out as shared_ptr, so Evict (when a segment is deleted)
// never pulls a reader from under a read in progress; the file closes when
// the last user lets go. Segment ids are never reused.
//
// At most max_open readers stay open, the least recently used closed first
// (as lsm::TableCache does for tables), so that a large log does not run
// the process out of file descriptors: a segment read after its reader was
// closed is opened again.
//
// With an io::FdBudget, every reader open, cached or not, holds one of its
// units until its last user lets go, so readers in use past max_open are
// counted; an open past the budget first closes idle tables and readers
// (CloseIdle is this cache's reclaimer), and readers leave an eighth of
// the budget to the tables, whose opens flushes and compactions need.
//
// Thread safety: every method may be called from any thread.
#ifndef CAIRN_VLOG_SEGMENT_READER_CACHE_H_
#define CAIRN_VLOG_SEGMENT_READER_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "io/fd_budget.h"
#include "io/file_system.h"
#include "vlog/segment_reader.h"
#include "vlog/value_pointer.h"

namespace cairn::vlog {

class SegmentReaderCache {
 public:
  // Builds the path of a segment from its id (the DB passes
  // lsm::ValueLogFileName bound to its directory). Called from any thread.
  using PathFunction = absl::AnyInvocable<std::string(uint64_t segment_id) const>;

  // fs must outlive the cache. max_open below 1 counts as 1. budget may
  // be null (no budget).
  SegmentReaderCache(io::FileSystem* fs, PathFunction path_of, bool direct_reads,
                     size_t max_open = kDefaultMaxOpen,
                     std::shared_ptr<io::FdBudget> budget = nullptr);
  ~SegmentReaderCache();

  // The default bound on open readers, as lsm::TableCache's on tables.
  static constexpr size_t kDefaultMaxOpen = 1000;

  SegmentReaderCache(const SegmentReaderCache&) = delete;
  SegmentReaderCache& operator=(const SegmentReaderCache&) = delete;

  // The reader of segment_id, opened now if it is not open yet.
  // Errors: those of SegmentReader::Open (not cached: the next call retries),
  // and the budget's ResourceExhausted (io::IsFdShortage) when it is spent
  // and, with wait, none comes free within its wait.
  absl::StatusOr<std::shared_ptr<const SegmentReader>> Get(uint64_t segment_id,
                                                           bool wait = true);

  // Closes the least recently used reader no user holds: true, or false
  // when every open reader is in use.
  bool CloseIdle();

  // Closes the segment's reader once its current users are done. No-op when
  // it is not open.
  void Evict(uint64_t segment_id);

  // SegmentReader::Read on the segment the pointer names.
  absl::Status Read(const ValuePointer& pointer, std::string_view expected_key,
                    std::string* value);

  // SegmentReader::MultiRead over pointers into any segments: groups them by
  // segment, with each segment's reads in flight together. Same contract as
  // SegmentReader::MultiRead; a segment that fails to open fails each of its
  // pointers with that status. Where the budget runs short, the reads
  // of the readers it holds go first and free them for the rest.
  absl::Status MultiRead(absl::Span<const ValuePointer> pointers,
                         absl::Span<const std::string_view> keys,
                         std::vector<std::string>* values,
                         std::vector<absl::Status>* statuses);

  // Readers the cache holds open (readers in use after their eviction are
  // not counted).
  size_t open_readers() const;

 private:
  struct Entry {
    uint64_t segment_id;
    std::shared_ptr<const SegmentReader> reader;
  };

  io::FileSystem* const fs_;
  const PathFunction path_of_;
  const bool direct_reads_;
  const size_t max_open_;
  const std::shared_ptr<io::FdBudget> budget_;
  uint64_t reclaimer_id_ = 0;
  mutable absl::Mutex mu_;
  std::list<Entry> lru_ ABSL_GUARDED_BY(mu_);  // front = most recently used
  absl::flat_hash_map<uint64_t, std::list<Entry>::iterator> index_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn::vlog

#endif  // CAIRN_VLOG_SEGMENT_READER_CACHE_H_

// PreparedRecords holds value records encoded before their place in the
// value log is known: the write path encodes a writer's large values in the
// writer's own thread (compression and checksums included, since a record's
// checksum covers neither its segment nor its offset), and the write-group
// leader only places them (ValueLog::AppendPrepared). Layout:
// docs/vlog_format.md.
//
// Thread safety: one thread at a time; a writer fills it, then hands it to
// the leader through the write queue (whose mutex orders the two).
#ifndef CAIRN_VLOG_PREPARED_RECORDS_H_
#define CAIRN_VLOG_PREPARED_RECORDS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "vlog/vlog_format.h"

namespace cairn::vlog {

class PreparedRecords {
 public:
  explicit PreparedRecords(const RecordEncoding& encoding) : encoding_(encoding) {}
  // Keeps the buffer for this thread's next Reserve when it is the largest
  // so far and at most kKeptBufferBytes (see Reserve).
  ~PreparedRecords();
  PreparedRecords(const PreparedRecords&) = delete;
  PreparedRecords& operator=(const PreparedRecords&) = delete;

  // The largest buffer a thread keeps between writes.
  static constexpr size_t kKeptBufferBytes = size_t{64} << 20;

  // Encodes the record of key and value after the others.
  // Errors: InvalidArgument when key or value is over its record limit
  // (nothing added); zstd's.
  absl::Status Add(std::string_view key, std::string_view value);

  // Room for bytes more of records, so that the records a writer adds are
  // not moved as the buffer grows. An empty one takes the buffer the last
  // PreparedRecords of this thread left, when it is large enough: a writer
  // of large batches (an etcd commit of 256 KiB values is tens of MiB) then
  // encodes into memory already mapped, not a new allocation faulted in
  // page by page (2026-12-08: most of such a commit's time in cairn_write).
  void Reserve(size_t bytes);

  size_t count() const { return sizes_.size(); }
  bool empty() const { return sizes_.empty(); }
  // Every record, back to back, in the order added.
  std::string_view bytes() const { return bytes_; }
  // The size of each record, in the order added.
  absl::Span<const uint32_t> sizes() const { return sizes_; }
  const RecordEncoding& encoding() const { return encoding_; }

 private:
  const RecordEncoding encoding_;
  std::string bytes_;
  std::vector<uint32_t> sizes_;
  std::string table_, body_;  // scratch for chunked values
};

}  // namespace cairn::vlog

#endif  // CAIRN_VLOG_PREPARED_RECORDS_H_

// SegmentReader reads value records of one value-log segment through
// ValuePointers, one device read per record, and verifies each before it
// returns a value: the pointer names this segment and lies past the header,
// the record's checksum and flags are good, its length equals the pointer's
// size, and the stored key is the key the caller looked up. Any failed check
// is DataLoss naming the file and the offset; a wrong value is never
// returned. Layout: docs/vlog_format.md.
//
// Thread safety: safe for concurrent use by many readers.
#ifndef CAIRN_VLOG_SEGMENT_READER_H_
#define CAIRN_VLOG_SEGMENT_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "io/file_system.h"
#include "vlog/value_pointer.h"
#include "vlog/vlog_format.h"

namespace cairn::vlog {

class SegmentReader {
 public:
  // Opens path and validates its header, which must name segment_id. Reads
  // are charged to io::IoCategory::kValueLog; direct_reads asks for O_DIRECT.
  // Errors: DataLoss naming the file when it is missing (a pointer names
  // it: never an absent key), or for a short or damaged header, or one
  // naming another segment; the file system's other errors; FailedPrecondition
  // for an unknown format version.
  static absl::StatusOr<std::unique_ptr<SegmentReader>> Open(io::FileSystem* fs,
                                                             std::string path,
                                                             uint64_t segment_id,
                                                             bool direct_reads);

  SegmentReader(const SegmentReader&) = delete;
  SegmentReader& operator=(const SegmentReader&) = delete;

  // Reads the record at pointer, checks it (see the class comment) and puts
  // its uncompressed value in *value.
  // Errors: DataLoss naming file and offset for any failed check, including a
  // record cut short by the end of the file; the file system's read errors.
  absl::Status Read(const ValuePointer& pointer, std::string_view expected_key,
                    std::string* value) const;

  // Reads bytes [offset, offset + length) of the value at pointer into
  // *out, fewer where the value ends first, reading the record's header, key
  // and what follows them only as far as it must:
  // - a chunked record: its table's header, the table entries of the chunks
  //   the range covers, then those chunks, each checked against its own
  //   checksum and decompressed alone; with !verify, where those chunks are
  //   stored raw, only the range's bytes (unchecked, as below);
  // - a plain record with !verify: then only the range's bytes. Checked: the
  //   header's lengths agree with the pointer, the flags are known, the key
  //   is expected_key; not checked: the value bytes returned (the record's
  //   checksum covers all of it);
  // - a zstd frame, or a plain record with verify: nothing more; sets
  //   *read_whole and leaves *out empty, and the caller reads the record
  //   whole (Read verifies it).
  // Errors: as Read.
  absl::Status ReadValueRange(const ValuePointer& pointer, std::string_view expected_key,
                              uint64_t offset, uint64_t length, bool verify, std::string* out,
                              bool* read_whole) const;

  // Reads many records with every read in flight at once
  // (io::RandomAccessFile::MultiRead). keys[i] is the key expected at
  // pointers[i]; (*values)[i] and (*statuses)[i] receive the value and the
  // outcome of Read for it (both vectors are resized to pointers.size()).
  // Returns OK when every read succeeded, else the first failure in index
  // order; InvalidArgument when the spans differ in length.
  absl::Status MultiRead(absl::Span<const ValuePointer> pointers,
                         absl::Span<const std::string_view> keys,
                         std::vector<std::string>* values,
                         std::vector<absl::Status>* statuses) const;

  // The two halves of one read, for batches that span segments
  // (SegmentReaderCache::MultiRead). PrepareRead checks pointer and fills
  // *req to read its record into *buf; FinishRead verifies and decodes what
  // arrived into *buf, which then holds the value.
  absl::Status PrepareRead(const ValuePointer& pointer, std::string* buf,
                           io::ReadRequest* req) const;
  absl::Status FinishRead(const ValuePointer& pointer, std::string_view expected_key,
                          const io::ReadRequest& req, std::string* buf) const;
  // DataLoss unless pointer can name a record of this segment.
  absl::Status CheckPointer(const ValuePointer& pointer) const;
  // Checks a record read whole (got: its bytes, from the record's start)
  // as FinishRead does and points *value at its value: inside got when the
  // value is stored raw, else in *scratch, which receives it decompressed.
  absl::Status DecodeView(const ValuePointer& pointer, std::string_view expected_key,
                          std::string_view got, std::string_view* value,
                          std::string* scratch) const;
  const io::RandomAccessFile* file() const { return file_.get(); }

  uint64_t segment_id() const { return header_.segment_id; }
  SegmentKind kind() const { return header_.kind; }
  const std::string& path() const { return path_; }
  // Bytes in the file now (it may still be growing).
  absl::StatusOr<uint64_t> FileSize() const { return file_->Size(); }

 private:
  // The n bytes at file_offset into *out, unchecked (part of pointer's
  // record, named in errors).
  absl::Status ReadPlainRange(const ValuePointer& pointer, uint64_t file_offset, uint64_t n,
                              std::string* out) const;
  SegmentReader(std::unique_ptr<io::RandomAccessFile> file, std::string path,
                SegmentHeader header);

  // Verifies the record bytes read for pointer (got of them arrived) and
  // turns *buf, which holds them, into the value.
  absl::Status Decode(const ValuePointer& pointer, std::string_view expected_key,
                      size_t got, std::string* buf) const;
  absl::Status Corrupt(const ValuePointer& pointer, absl::string_view what) const;

  const std::unique_ptr<io::RandomAccessFile> file_;
  const std::string path_;
  const SegmentHeader header_;
};

}  // namespace cairn::vlog

#endif  // CAIRN_VLOG_SEGMENT_READER_H_

// The structs behind the C API's opaque handles (cairn/c.h) and the helpers
// its two files share: c_api.cc (options, open, writes, reads) and
// c_api_iter.cc (iterators, snapshots, maintenance, statistics).
#ifndef CAIRN_CORE_C_API_INTERNAL_H_
#define CAIRN_CORE_C_API_INTERNAL_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "cairn/c.h"
#include "cairn/db.h"
#include "cairn/options.h"

struct cairn_t {
  std::unique_ptr<cairn::DB> db;
  // Set by cairn_close: the C++ DB answers FailedPrecondition after Close,
  // but the wrapper checks first so that calls it serves itself (snapshots,
  // iterators) fail the same way.
  bool closed = false;
};

struct cairn_options_t {
  cairn::Options options;
  // The enums are kept as the caller gave them, so that an out-of-range
  // value fails the open with InvalidArgument rather than being cast.
  int compression = static_cast<int>(cairn::Compression::kZstd);
  int io_backend = static_cast<int>(cairn::IoBackendOption::kAuto);
};

struct cairn_readoptions_t {
  cairn::ReadOptions options;
  bool has_lower = false, has_upper = false;
  std::string lower, upper;
};

struct cairn_writeoptions_t {
  cairn::WriteOptions options;
};

struct cairn_writebatch_t {
  cairn::WriteBatch batch;
};

struct cairn_pinnable_t {
  cairn::PinnableValue value;
};

namespace cairn::c_api {

// Stores status's message in *errptr (freeing what it held); false when
// status is not OK. A NULL errptr drops the message.
bool SaveError(const absl::Status& status, char** errptr);

// Copies bytes into a fresh malloc'd buffer (at least one byte, so that an
// empty value is not NULL).
char* CopyOut(std::string_view bytes);

// OK when db can take a call; else the error to return.
absl::Status CheckDb(const cairn_t* db);

// A key or value of (ptr, len): InvalidArgument for NULL with a length.
absl::Status CheckBytes(const char* ptr, size_t len, const char* what);
inline std::string_view Bytes(const char* ptr, size_t len) {
  return ptr == nullptr ? std::string_view() : std::string_view(ptr, len);
}

// The ReadOptions of options (defaults for NULL), pointing into *options'
// bounds: options must outlive the result's use.
cairn::ReadOptions ToReadOptions(const cairn_readoptions_t* options,
                                 std::string_view* lower_storage, std::string_view* upper_storage);

}  // namespace cairn::c_api

#endif  // CAIRN_CORE_C_API_INTERNAL_H_

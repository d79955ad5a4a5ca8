// The OPTIONS file: a text record of the options a database was last opened
// with, and of the format properties its files were written under. Format:
// docs/options_format.md.
//
// Every read-write open writes OPTIONS-<n> (through a temporary file, a
// rename and a directory sync) and keeps the one before it; each open, read-
// only ones included, first checks the [format] section of the newest one
// against this build.
//
// Thread safety: the functions are pure or touch only the files they name;
// open calls them before any background thread starts.
#ifndef CAIRN_CORE_OPTIONS_FILE_H_
#define CAIRN_CORE_OPTIONS_FILE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cairn/options.h"
#include "io/file_system.h"

namespace cairn {

inline constexpr uint32_t kOptionsFileVersion = 1;

// The text of an OPTIONS file for options under this build.
std::string FormatOptionsFile(const Options& options);

// Checks text, read from path (named in errors), against this build.
// DataLoss for a line that is not a comment, a [section] or key=value;
// FailedPrecondition naming the key when the file is of a newer version, or
// its [format] section records a file format version above this build's, a
// key size or value size limit above this build's (such a database may hold
// keys or values this build refuses), or a format key this build does not
// know. Keys of [options] are not checked: they are tuning.
absl::Status CheckOptionsFile(std::string_view text, std::string_view path);

// The number of the newest OPTIONS-<n> in dbname; nullopt when none.
absl::StatusOr<std::optional<uint64_t>> LatestOptionsFile(io::FileSystem* fs,
                                                          const std::string& dbname);

// Reads OPTIONS-<number> (at most 1 MiB).
absl::StatusOr<std::string> ReadOptionsFile(io::FileSystem* fs, const std::string& dbname,
                                            uint64_t number);

// Writes OPTIONS-<number> for options: the text goes to <number>.tmp, which
// is synced and renamed, then the directory is synced. Afterwards every
// OPTIONS file older than the previous newest one is removed (best effort).
// On error the temporary file is removed and the older files stay.
absl::Status WriteOptionsFile(io::FileSystem* fs, const std::string& dbname, uint64_t number,
                              const Options& options);

}  // namespace cairn

#endif  // CAIRN_CORE_OPTIONS_FILE_H_

// File names of a cairn database directory, and the CURRENT file that names
// the live manifest.
//
//   NNNNNN.log       write-ahead log          NNNNNN.sst   table (SST)
//   NNNNNN.vlog      value-log segment        NNNNNN.tmp   temporary file
//   MANIFEST-NNNNNN  version edits            CURRENT      "MANIFEST-NNNNNN\n"
//   LOCK             held while a DB is open
//   OPTIONS-NNNNNN   the options of an open (docs/options_format.md)
//   LOG, LOG.old.N   the info log and its rotated copies (number N, 0 for LOG)
//
// NNNNNN is a file number, at least six decimal digits. All numbered files of
// one database share a single number space (VersionSet::NewFileNumber).
//
// Thread safety: the functions are pure, except the two that touch CURRENT,
// which must not race with each other (VersionSet serializes them).
#ifndef CAIRN_LSM_FILENAME_H_
#define CAIRN_LSM_FILENAME_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/file_system.h"

namespace cairn::lsm {

enum class FileType : uint8_t {
  kLog = 0,
  kTable = 1,
  kValueLog = 2,
  kManifest = 3,
  kCurrent = 4,
  kLock = 5,
  kTemp = 6,
  kUnknown = 7,
  kOptions = 8,
  kInfoLog = 9,
};

std::string_view FileTypeName(FileType type);

// Each returns dbname joined with the file's name.
std::string TableFileName(std::string_view dbname, uint64_t number);
std::string LogFileName(std::string_view dbname, uint64_t number);
std::string ValueLogFileName(std::string_view dbname, uint64_t number);
std::string ManifestFileName(std::string_view dbname, uint64_t number);
std::string TempFileName(std::string_view dbname, uint64_t number);
std::string OptionsFileName(std::string_view dbname, uint64_t number);
std::string CurrentFileName(std::string_view dbname);
std::string LockFileName(std::string_view dbname);

// Parses a file name (not a path) of the list above. Returns false, leaving
// *type as kUnknown, for anything else (including numbers that overflow 64
// bits). *number is 0 for CURRENT and LOCK.
bool ParseFileName(std::string_view name, uint64_t* number, FileType* type);

// Points CURRENT at MANIFEST-<manifest_number>: writes the line to
// NNNNNN.tmp (numbered after the manifest), syncs it, renames it over
// CURRENT and syncs the directory. On error the temporary file is removed
// (best effort) and CURRENT names either the old or the new manifest.
absl::Status SetCurrentFile(io::FileSystem* fs, std::string_view dbname,
                            uint64_t manifest_number);

// Reads CURRENT and returns the manifest number it names.
// Errors: NotFound when CURRENT does not exist; DataLoss naming CURRENT when
// its content is not exactly one line "MANIFEST-<digits>\n"; I/O errors as
// the file system reports them.
absl::StatusOr<uint64_t> ReadCurrentFile(io::FileSystem* fs, std::string_view dbname);

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_FILENAME_H_

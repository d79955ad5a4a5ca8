#include "lsm/filename.h"

#include <limits>
#include <memory>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "io/status_macros.h"

namespace cairn::lsm {
namespace {

constexpr std::string_view kManifestPrefix = "MANIFEST-";
constexpr std::string_view kOptionsPrefix = "OPTIONS-";
constexpr std::string_view kCurrentName = "CURRENT";
constexpr std::string_view kLockName = "LOCK";

// CURRENT holds one short line; anything much larger is not a CURRENT file.
constexpr size_t kMaxCurrentSize = 64;

std::string ManifestBaseName(uint64_t number) {
  return absl::StrFormat("%s%06u", kManifestPrefix, number);
}

std::string NumberedName(std::string_view dbname, uint64_t number, std::string_view suffix) {
  return io::JoinPath(dbname, absl::StrFormat("%06u.%s", number, suffix));
}

// Consumes a non-empty run of decimal digits from *in into *value; false on
// no digits or 64-bit overflow.
bool ConsumeNumber(std::string_view* in, uint64_t* value) {
  uint64_t v = 0;
  size_t i = 0;
  for (; i < in->size() && absl::ascii_isdigit(static_cast<unsigned char>((*in)[i])); ++i) {
    const uint64_t digit = static_cast<uint64_t>((*in)[i] - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - digit) / 10) return false;
    v = v * 10 + digit;
  }
  if (i == 0) return false;
  in->remove_prefix(i);
  *value = v;
  return true;
}

}  // namespace

std::string_view FileTypeName(FileType type) {
  switch (type) {
    case FileType::kLog: return "log";
    case FileType::kTable: return "table";
    case FileType::kValueLog: return "value log";
    case FileType::kManifest: return "manifest";
    case FileType::kCurrent: return "current";
    case FileType::kLock: return "lock";
    case FileType::kTemp: return "temp";
    case FileType::kOptions: return "options";
    case FileType::kInfoLog: return "info log";
    case FileType::kUnknown: break;
  }
  return "unknown";
}

std::string TableFileName(std::string_view dbname, uint64_t number) {
  return NumberedName(dbname, number, "sst");
}
std::string LogFileName(std::string_view dbname, uint64_t number) {
  return NumberedName(dbname, number, "log");
}
std::string ValueLogFileName(std::string_view dbname, uint64_t number) {
  return NumberedName(dbname, number, "vlog");
}
std::string TempFileName(std::string_view dbname, uint64_t number) {
  return NumberedName(dbname, number, "tmp");
}
std::string ManifestFileName(std::string_view dbname, uint64_t number) {
  return io::JoinPath(dbname, ManifestBaseName(number));
}
std::string OptionsFileName(std::string_view dbname, uint64_t number) {
  return io::JoinPath(dbname, absl::StrFormat("%s%06u", kOptionsPrefix, number));
}

std::string CurrentFileName(std::string_view dbname) {
  return io::JoinPath(dbname, kCurrentName);
}
std::string LockFileName(std::string_view dbname) { return io::JoinPath(dbname, kLockName); }

bool ParseFileName(std::string_view name, uint64_t* number, FileType* type) {
  *type = FileType::kUnknown;
  if (name == kCurrentName) {
    *number = 0;
    *type = FileType::kCurrent;
    return true;
  }
  if (name == kLockName) {
    *number = 0;
    *type = FileType::kLock;
    return true;
  }
  std::string_view rest = name;
  uint64_t n = 0;
  if (name == "LOG") {
    *number = 0;
    *type = FileType::kInfoLog;
    return true;
  }
  if (rest.substr(0, 8) == "LOG.old.") {
    rest.remove_prefix(8);
    if (!ConsumeNumber(&rest, &n) || !rest.empty()) return false;
    *number = n;
    *type = FileType::kInfoLog;
    return true;
  }
  if (rest.substr(0, kManifestPrefix.size()) == kManifestPrefix) {
    rest.remove_prefix(kManifestPrefix.size());
    if (!ConsumeNumber(&rest, &n) || !rest.empty()) return false;
    *number = n;
    *type = FileType::kManifest;
    return true;
  }
  if (rest.substr(0, kOptionsPrefix.size()) == kOptionsPrefix) {
    rest.remove_prefix(kOptionsPrefix.size());
    if (!ConsumeNumber(&rest, &n) || !rest.empty()) return false;
    *number = n;
    *type = FileType::kOptions;
    return true;
  }
  if (!ConsumeNumber(&rest, &n)) return false;
  FileType t;
  if (rest == ".log") {
    t = FileType::kLog;
  } else if (rest == ".sst") {
    t = FileType::kTable;
  } else if (rest == ".vlog") {
    t = FileType::kValueLog;
  } else if (rest == ".tmp") {
    t = FileType::kTemp;
  } else {
    return false;
  }
  *number = n;
  *type = t;
  return true;
}

absl::Status SetCurrentFile(io::FileSystem* fs, std::string_view dbname,
                            uint64_t manifest_number) {
  const std::string contents = absl::StrCat(ManifestBaseName(manifest_number), "\n");
  const std::string tmp = TempFileName(dbname, manifest_number);
  io::FileOptions options;
  options.category = io::IoCategory::kManifest;

  absl::Status s = [&]() -> absl::Status {
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::WritableFile> file,
                           fs->NewWritableFile(tmp, options));
    CAIRN_RETURN_IF_ERROR(file->Append(contents));
    CAIRN_RETURN_IF_ERROR(file->Sync());
    CAIRN_RETURN_IF_ERROR(file->Close());
    return fs->RenameFile(tmp, CurrentFileName(dbname));
  }();
  if (!s.ok()) {
    fs->RemoveFile(tmp).IgnoreError();  // Garbage either way; the error that matters is s.
    return s;
  }
  return fs->SyncDir(std::string(dbname));
}

absl::StatusOr<uint64_t> ReadCurrentFile(io::FileSystem* fs, std::string_view dbname) {
  const std::string path = CurrentFileName(dbname);
  if (!fs->FileExists(path)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  io::FileOptions options;
  options.category = io::IoCategory::kManifest;
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::RandomAccessFile> file,
                         fs->NewRandomAccessFile(path, options));
  CAIRN_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  auto corrupt = [&](std::string_view why, std::string_view content) {
    return absl::DataLossError(absl::StrFormat(
        "%s: corrupt content (%s; expected one line \"MANIFEST-<number>\"): \"%s\"", path, why,
        absl::CHexEscape(absl::string_view(content.data(), content.size()))));
  };
  if (size > kMaxCurrentSize) {
    return corrupt(absl::StrCat(size, " bytes is too long"), "");
  }
  std::string scratch(static_cast<size_t>(size), '\0');
  std::string_view content;
  CAIRN_RETURN_IF_ERROR(file->Read(0, scratch.size(), scratch.data(), &content));
  if (content.size() != size) {
    return corrupt(absl::StrCat("short read of ", content.size(), " of ", size, " bytes"),
                   content);
  }
  std::string_view line = content;
  if (line.empty() || line.back() != '\n') return corrupt("no terminating newline", content);
  line.remove_suffix(1);
  uint64_t number = 0;
  FileType type = FileType::kUnknown;
  if (!ParseFileName(line, &number, &type) || type != FileType::kManifest) {
    return corrupt("not a manifest name", content);
  }
  return number;
}

}  // namespace cairn::lsm

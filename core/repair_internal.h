// RepairWithFileSystem: RepairDB (cairn/repair.h) on a given file system,
// for tests (in-memory and fault-injecting file systems).
#ifndef CAIRN_CORE_REPAIR_INTERNAL_H_
#define CAIRN_CORE_REPAIR_INTERNAL_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "cairn/options.h"
#include "cairn/repair.h"
#include "io/file_system.h"

namespace cairn {

absl::Status RepairWithFileSystem(const Options& options, const std::string& path,
                                  std::shared_ptr<io::FileSystem> fs, RepairReport* report);

}  // namespace cairn

#endif  // CAIRN_CORE_REPAIR_INTERNAL_H_

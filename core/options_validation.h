// ValidateOptions: the ranges of the Options fields that have limits,
// checked before DB::Open touches the file system.
#ifndef CAIRN_CORE_OPTIONS_VALIDATION_H_
#define CAIRN_CORE_OPTIONS_VALIDATION_H_

#include "absl/status/status.h"
#include "cairn/options.h"

namespace cairn {

// InvalidArgument naming the first field out of its range; OK otherwise.
absl::Status ValidateOptions(const Options& o);

}  // namespace cairn

#endif  // CAIRN_CORE_OPTIONS_VALIDATION_H_

// The version of cairn these headers belong to, and a link-time check that
// the application and the library were built against the same cairn and the
// same abseil (docs/decisions/20261201_abseil_in_public_api.md).
//
// The version is written here and nowhere else: CMakeLists.txt reads it.
#ifndef CAIRN_VERSION_H_
#define CAIRN_VERSION_H_

#include "absl/base/config.h"

#define CAIRN_VERSION_MAJOR 0
#define CAIRN_VERSION_MINOR 1
#define CAIRN_VERSION_PATCH 0
#define CAIRN_VERSION_STRING "0.1.0"
// MAJOR * 10000 + MINOR * 100 + PATCH, for #if comparisons.
#define CAIRN_VERSION_NUMBER \
  (CAIRN_VERSION_MAJOR * 10000 + CAIRN_VERSION_MINOR * 100 + CAIRN_VERSION_PATCH)

// The public API passes absl::Status, absl::StatusOr and std types across
// the library boundary, so the application must compile against the
// abseil the library was built with. Abseil's inline namespace (its
// "lts_YYYYMMDD", or a distribution's own name) says which one; cairn's
// minor version says which cairn ABI. Both go into the name of a symbol the
// library defines and every translation unit that includes cairn/db.h
// refers to, so a mismatch fails to link, naming the symbol, instead of
// mixing two layouts of absl::Status at run time.
#if ABSL_OPTION_USE_INLINE_NAMESPACE
#define CAIRN_ABSL_ABI_NAME_ ABSL_OPTION_INLINE_NAMESPACE_NAME
#else
#define CAIRN_ABSL_ABI_NAME_ no_inline_namespace
#endif
#define CAIRN_ABI_JOIN2_(a, b) a##b
#define CAIRN_ABI_JOIN_(a, b) CAIRN_ABI_JOIN2_(a, b)
#define CAIRN_ABI_TAG                                                                 \
  CAIRN_ABI_JOIN_(CAIRN_ABI_JOIN_(CAIRN_ABI_JOIN_(cairn_abi_v, CAIRN_VERSION_MAJOR), \
                                  CAIRN_ABI_JOIN_(_, CAIRN_VERSION_MINOR)),           \
                  CAIRN_ABI_JOIN_(_absl_, CAIRN_ABSL_ABI_NAME_))

extern "C" const char CAIRN_ABI_TAG;

namespace cairn::internal {
// Emitted (gnu::used) in every translation unit, so the reference to the
// tag survives optimisation and the linker must find it.
[[gnu::used, maybe_unused]] static const char* const kAbiTagReference = &CAIRN_ABI_TAG;
}  // namespace cairn::internal

#endif  // CAIRN_VERSION_H_

// Defines the link-time ABI tag that cairn/version.h refers to: its name
// carries cairn's major and minor version and abseil's inline namespace.
#include "cairn/version.h"

extern "C" const char CAIRN_ABI_TAG = 0;

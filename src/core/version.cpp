#include "core/version.h"

// K3_VERSION comes from CMake (set_source_files_properties on this file only), so a version
// bump recompiles one file.
namespace k3 {

const char* version() { return K3_VERSION; }

}  // namespace k3

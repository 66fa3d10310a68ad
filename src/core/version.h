#pragma once
// The project's version, set once: `project(k3cpp VERSION …)` in CMakeLists.txt. Everything
// that prints or reports a version (k3 --version, /props, the OpenAI system_fingerprint)
// reads it from here.

namespace k3 {

const char* version();  // "0.1.0"

}  // namespace k3

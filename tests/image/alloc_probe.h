// tests/image/alloc_probe: the largest operator-new request since the last reset, so a test can
// show that a decode refused a huge image before allocating its pixels (the image's buffer is a
// std::vector, allocated through operator new). The test binary replaces the global operator
// new to count; the libraries' own malloc calls are not seen.
#pragma once

#include <cstddef>

namespace imgtest {

void reset_largest_allocation();
size_t largest_allocation();

}  // namespace imgtest

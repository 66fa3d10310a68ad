// store/reader_backends: constructors of the two Reader back ends (internal to the store).
// make_uring_reader() returns null where io_uring cannot be set up (no liburing at build
// time, a kernel or sandbox that refuses it); the caller then uses the pread pool.
#pragma once

#include <memory>

#include "store/reader.h"

namespace k3::store {

std::unique_ptr<Reader> make_pread_reader(ReadDone done, int depth);
std::unique_ptr<Reader> make_uring_reader(ReadDone done, int depth);

}  // namespace k3::store

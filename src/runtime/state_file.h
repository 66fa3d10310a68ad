// runtime/state_file: one sequence's state on disk (the prompt cache's disk tier, slot save
// and restore, `k3 chat /save`). Our own format, version kStateFileVersion:
//   header (128 bytes: magic "K3STATE\n", version, cache type, model identity, token count,
//           the token list's prefix-chain hash, owner length, state bytes, checksums of the
//           owner + tokens and of the header itself)
//   owner (the cache_owner whose requests may reuse it), tokens (int32 each),
//   state (SequenceState::chunks() in order), trailer (checksum of the state, magic "K3END\n\0").
// Contract: write_state_file writes through core/atomic_file (a temporary renamed over the
// path, mode 0600: a conversation's state is as private as its text), so a reader sees the
// old file, the new one or none, never a torn one. read_state_header reads 128 bytes plus
// the owner and checks everything it can without the state (magic, version, header checksum,
// model identity, cache type, the file's size); read_state_file also checks the tokens' and
// the state's checksums. Either throws k3::Error with a one-line reason (foreign model, other
// version, truncated, corrupt…) and never returns a state it could not verify, so a caller
// that falls back to a prefill on any error never gives a different answer.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/sequence_state.h"

namespace k3::model {
struct HParams;
}

namespace k3::runtime {

constexpr uint32_t kStateFileVersion = 1;
constexpr size_t kStateOwnerMax = 4096;  // longest owner string a file may name

// What a state file must match to be used: the model, the engine's cache type, its context.
struct StateTarget {
  uint64_t model_id = 0;
  const model::HParams* hp = nullptr;
  model::CacheType cache_type = model::CacheType::F32;
  int64_t n_ctx = 0;  // a file holding more tokens is refused
};

struct StateFileInfo {
  uint32_t version = 0;
  uint64_t model_id = 0;
  model::CacheType cache_type = model::CacheType::F32;
  uint64_t n_tokens = 0;
  uint64_t chain = 0;  // chain_next over the tokens from kChainSeed (core/hash64.h)
  std::string owner;
  uint64_t state_bytes = 0;
  uint64_t file_bytes = 0;
};

struct SavedState {
  StateFileInfo info;
  std::vector<int32_t> tokens;
  std::unique_ptr<model::SequenceState> state;
};

uint64_t token_chain(std::span<const int32_t> tokens);

// Writes `st` (which holds exactly `tokens`) with its tokens and owner; returns the bytes
// written. Throws k3::Error (disk full, no permission…), leaving no file at `path`'s name
// changed.
uint64_t write_state_file(const std::string& path, const StateTarget& t, const model::SequenceState& st,
                          std::span<const int32_t> tokens, const std::string& owner);
StateFileInfo read_state_header(const std::string& path, const StateTarget& t);
// max_rows: the engine's context, reserved for the cache as the engine would.
SavedState read_state_file(const std::string& path, const StateTarget& t);

}  // namespace k3::runtime

// runtime/state_file: see state_file.h.
#include "runtime/state_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hash64.h"
#include "model/hparams.h"

namespace k3::runtime {

namespace {

constexpr char kMagic[8] = {'K', '3', 'S', 'T', 'A', 'T', 'E', '\n'};
constexpr char kEndMagic[8] = {'K', '3', 'E', 'N', 'D', '\n', '\0', '\0'};

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t cache_type;  // 0 F32, 1 F16
  uint64_t model_id;
  uint64_t n_tokens;
  uint64_t chain;
  uint64_t owner_len;
  uint64_t state_bytes;
  uint64_t body_sum;  // owner bytes then token bytes
  uint64_t created;   // unix seconds (for people reading a directory listing)
  uint8_t reserved[48];
  uint64_t header_sum;  // of everything above
};
static_assert(sizeof(Header) == 128);

struct Trailer {
  uint64_t state_sum;
  char magic[8];
};
static_assert(sizeof(Trailer) == 16);

uint64_t body_sum(const std::string& owner, std::span<const int32_t> tokens) {
  Hash64Stream h;
  h.add(owner.data(), owner.size());
  h.add(tokens.data(), tokens.size_bytes());
  return h.value();
}

// A file descriptor closed on every path out.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

void read_exact(int fd, void* dst, size_t n, uint64_t at, const std::string& path) {
  auto* p = static_cast<char*>(dst);
  while (n > 0) {
    const ssize_t r = ::pread(fd, p, n, static_cast<off_t>(at));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail("{}: read failed: {}", path, std::strerror(errno));
    if (r == 0) fail("{}: truncated (ends at byte {})", path, at);
    p += r, at += static_cast<uint64_t>(r), n -= static_cast<size_t>(r);
  }
}

StateFileInfo check_header(const Header& h, uint64_t size, const StateTarget& t, const std::string& path) {
  if (std::memcmp(h.magic, kMagic, 8) != 0) fail("{}: not a k3 state file", path);
  if (h.version != kStateFileVersion)
    fail("{}: state file version {}, this k3 reads version {}", path, h.version, kStateFileVersion);
  if (hash64(&h, offsetof(Header, header_sum)) != h.header_sum) fail("{}: corrupt header (checksum)", path);
  if (h.model_id != t.model_id)
    fail("{}: saved by another model (identity {:016x}, this model {:016x})", path, h.model_id, t.model_id);
  const auto type = h.cache_type == 1 ? model::CacheType::F16 : model::CacheType::F32;
  if (h.cache_type > 1 || type != t.cache_type)
    fail("{}: saved with cache type {}, this engine uses {}", path, h.cache_type == 1 ? "f16" : "f32",
         t.cache_type == model::CacheType::F16 ? "f16" : "f32");
  if (h.owner_len > kStateOwnerMax) fail("{}: corrupt header (owner of {} bytes)", path, h.owner_len);
  if (t.n_ctx > 0 && h.n_tokens > static_cast<uint64_t>(t.n_ctx))
    fail("{}: holds {} tokens, more than the context ({})", path, h.n_tokens, t.n_ctx);
  if (h.n_tokens > (1ull << 40)) fail("{}: corrupt header ({} tokens)", path, h.n_tokens);
  const uint64_t state = model::SequenceState::saved_bytes(*t.hp, type, static_cast<int64_t>(h.n_tokens));
  if (h.state_bytes != state)
    fail("{}: corrupt header (state of {} bytes, expected {})", path, h.state_bytes, state);
  const uint64_t want = sizeof(Header) + h.owner_len + h.n_tokens * 4 + state + sizeof(Trailer);
  if (size < want) fail("{}: truncated ({} of {} bytes)", path, size, want);
  if (size > want) fail("{}: corrupt ({} bytes, expected {})", path, size, want);
  StateFileInfo info;
  info.version = h.version;
  info.model_id = h.model_id;
  info.cache_type = type;
  info.n_tokens = h.n_tokens;
  info.chain = h.chain;
  info.state_bytes = state;
  info.file_bytes = size;
  return info;
}

// Opens `path` and checks its header; `h` receives the header, the info its owner.
StateFileInfo open_checked(const std::string& path, const StateTarget& t, Fd& fd, Header& h) {
  fd.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd.fd < 0) fail("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0 || !S_ISREG(st.st_mode)) fail("{}: not a regular file", path);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < sizeof(Header)) fail("{}: truncated ({} bytes)", path, size);
  read_exact(fd.fd, &h, sizeof h, 0, path);
  StateFileInfo info = check_header(h, size, t, path);
  info.owner.resize(h.owner_len);
  read_exact(fd.fd, info.owner.data(), info.owner.size(), sizeof(Header), path);
  return info;
}

}  // namespace

uint64_t token_chain(std::span<const int32_t> tokens) {
  uint64_t h = kChainSeed;
  for (int32_t t : tokens) h = chain_next(h, t);
  return h;
}

uint64_t write_state_file(const std::string& path, const StateTarget& t, const model::SequenceState& st,
                          std::span<const int32_t> tokens, const std::string& owner) {
  if (st.n_past() != static_cast<int64_t>(tokens.size()))
    fail("{}: the state holds {} tokens, the token list {}", path, st.n_past(), tokens.size());
  if (owner.size() > kStateOwnerMax) fail("{}: owner of {} bytes is too long", path, owner.size());
  const auto chunks = st.chunks();
  Header h{};
  std::memcpy(h.magic, kMagic, 8);
  h.version = kStateFileVersion;
  h.cache_type = st.cache_type() == model::CacheType::F16 ? 1 : 0;
  h.model_id = t.model_id;
  h.n_tokens = tokens.size();
  h.chain = token_chain(tokens);
  h.owner_len = owner.size();
  for (const auto& c : chunks) h.state_bytes += c.second;
  const uint64_t expect = model::SequenceState::saved_bytes(*t.hp, st.cache_type(), st.n_past());
  if (h.state_bytes != expect) fail("{}: state of {} bytes, expected {}", path, h.state_bytes, expect);
  h.body_sum = body_sum(owner, tokens);
  h.created = static_cast<uint64_t>(std::time(nullptr));
  h.header_sum = hash64(&h, offsetof(Header, header_sum));
  AtomicFileOptions ao;
  ao.new_mode = 0600;
  ao.refuse_symlink = true;
  AtomicFile f(path, ao);
  f.write(&h, sizeof h);
  f.write(owner.data(), owner.size());
  f.write(tokens.data(), tokens.size_bytes());
  Hash64Stream sum;
  for (const auto& [p, n] : chunks) {
    f.write(p, n);
    sum.add(p, n);
  }
  Trailer tr{sum.value(), {}};
  std::memcpy(tr.magic, kEndMagic, 8);
  f.write(&tr, sizeof tr);
  f.commit();
  return f.offset();
}

StateFileInfo read_state_header(const std::string& path, const StateTarget& t) {
  Fd fd;
  Header h{};
  return open_checked(path, t, fd, h);
}

SavedState read_state_file(const std::string& path, const StateTarget& t) {
  Fd fd;
  Header h{};
  SavedState out;
  out.info = open_checked(path, t, fd, h);
  uint64_t at = sizeof(Header) + h.owner_len;
  out.tokens.resize(h.n_tokens);
  read_exact(fd.fd, out.tokens.data(), out.tokens.size() * 4, at, path);
  at += h.n_tokens * 4;
  if (body_sum(out.info.owner, out.tokens) != h.body_sum) fail("{}: corrupt token list (checksum)", path);
  if (token_chain(out.tokens) != h.chain) fail("{}: corrupt token list (chain)", path);
  out.state = std::make_unique<model::SequenceState>(*t.hp, out.info.cache_type);
  out.state->set_max_rows(t.n_ctx);
  out.state->set_rows(*t.hp, static_cast<int64_t>(h.n_tokens));
  Hash64Stream sum;
  for (const auto& [p, n] : out.state->chunks()) {
    read_exact(fd.fd, p, n, at, path);
    sum.add(p, n);
    at += n;
  }
  Trailer tr{};
  read_exact(fd.fd, &tr, sizeof tr, at, path);
  if (std::memcmp(tr.magic, kEndMagic, 8) != 0 || tr.state_sum != sum.value())
    fail("{}: corrupt state (checksum)", path);
  return out;
}

}  // namespace k3::runtime

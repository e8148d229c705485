// .npz archives through libzip.
#include "tapeflow/io/npz.hpp"

#include <sys/stat.h>
#include <zip.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string_view>

#include "core/op_error.hpp"
#include "io/atomic_write.hpp"
#include "io/npy.hpp"
#include "tapeflow/creation.hpp"

namespace tapeflow::io {

using detail::npy_header;

namespace {

std::string zip_code_message(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string msg = zip_error_strerror(&e);
  zip_error_fini(&e);
  return msg;
}

struct ZipDiscard {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct ZipFileClose {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};
struct FileClose {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

/** The longest entry name zip can store (a 16-bit length field). */
constexpr size_t kMaxEntryName = 65535;
/** What save_npz appends to an array's name to name its entry. */
constexpr std::string_view kSuffix = ".npy";

void check_names(const NamedTensors& named, const char* op) {
  std::set<std::string> seen;
  for (const auto& [name, t] : named) {
    if (name.empty())
      throw op_error<ValueError>(op,
                                 "expected non-empty array names, got \"\"");
    // zip stores an entry name's length in 16 bits; a longer one would be
    // cut short (and a NUL would cut it at the NUL), so refuse both.
    if (name.size() > kMaxEntryName - kSuffix.size())
      throw op_error<ValueError>(
          op, "expected array names of at most ",
          kMaxEntryName - kSuffix.size(), " bytes (", kMaxEntryName,
          " with \".npy\", zip's limit), got ", name.size(),
          " bytes in a name starting \"", name.substr(0, 16), "\"");
    if (const size_t nul = name.find('\0'); nul != std::string::npos)
      throw op_error<ValueError>(
          op, "expected array names without NUL bytes, got a NUL at byte ", nul,
          " of a ", name.size(), "-byte name starting \"", name.substr(0, nul),
          "\"");
    if (!seen.insert(name).second)
      throw op_error<ValueError>(op, "expected distinct array names, got \"",
                                 name, "\" twice");
    if (!t.defined())
      throw op_error<ValueError>(op, "expected a tensor for \"", name,
                                 "\", got an undefined tensor");
    if (is_string(t.dtype()))
      throw op_error<DTypeError>(op,
                                 "expected numeric arrays, got a string "
                                 "tensor for \"",
                                 name, "\"");
  }
}

/**
 * Writes an archive without entries: only the end of central directory
 * record, as Python's zipfile (and so np.savez()) does. libzip writes no file
 * at all for an archive without entries.
 */
void write_empty_zip(const std::string& file) {
  static constexpr char kEmptyZip[22] = {'P', 'K', 5, 6};
  std::unique_ptr<std::FILE, FileClose> f(std::fopen(file.c_str(), "wb"));
  if (!f)
    throw IOError("[save_npz] creating " + file +
                  " failed: " + std::strerror(errno));
  if (std::fwrite(kEmptyZip, 1, sizeof kEmptyZip, f.get()) !=
          sizeof kEmptyZip ||
      std::fflush(f.get()) != 0)
    throw IOError("[save_npz] writing " + file +
                  " failed: " + std::strerror(errno));
  std::FILE* raw = f.release();
  if (std::fclose(raw) != 0)
    throw IOError("[save_npz] writing " + file +
                  " failed: " + std::strerror(errno));
}

void write_zip(const std::string& file, const NamedTensors& named,
               bool compressed) {
  if (named.empty()) return write_empty_zip(file);
  // Header strings and host tensors must outlive zip_close(), which reads
  // the buffers.
  std::vector<std::string> headers;
  std::vector<Tensor> hosts;
  headers.reserve(named.size());
  hosts.reserve(named.size());
  int code = 0;
  std::unique_ptr<zip_t, ZipDiscard> za(
      zip_open(file.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code));
  if (!za)
    throw IOError("[save_npz] creating " + file +
                  " failed: " + zip_code_message(code));
  for (const auto& [name, t] : named) {
    hosts.push_back(t.cpu().contiguous());
    const Tensor& h = hosts.back();
    headers.push_back(npy_header(h.dtype(), h.shape()));
    const std::string& hd = headers.back();
    const uint64_t nbytes =
        static_cast<uint64_t>(h.numel()) * itemsize(h.dtype());
    zip_buffer_fragment_t frags[2] = {
        {reinterpret_cast<zip_uint8_t*>(const_cast<char*>(hd.data())),
         hd.size()},
        {static_cast<zip_uint8_t*>(nbytes ? h.raw_data() : nullptr), nbytes}};
    zip_source_t* src =
        zip_source_buffer_fragment(za.get(), frags, nbytes ? 2 : 1, 0);
    if (!src)
      throw IOError("[save_npz] adding array \"" + name + "\" to " + file +
                    " failed: " + zip_strerror(za.get()));
    const std::string member = name + std::string(kSuffix);
    const zip_int64_t idx = zip_file_add(za.get(), member.c_str(), src,
                                         ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE);
    if (idx < 0) {
      zip_source_free(src);
      throw IOError("[save_npz] adding array \"" + name + "\" to " + file +
                    " failed: " + zip_strerror(za.get()));
    }
    if (zip_set_file_compression(za.get(), static_cast<zip_uint64_t>(idx),
                                 compressed ? ZIP_CM_DEFLATE : ZIP_CM_STORE,
                                 0) != 0)
      throw IOError("[save_npz] setting the compression of \"" + name +
                    "\" in " + file + " failed: " + zip_strerror(za.get()));
  }
  if (zip_close(za.get()) != 0)
    throw IOError("[save_npz] writing " + file +
                  " failed: " + zip_strerror(za.get()));
  za.release();  // zip_close freed it
}

/** Reads up to n bytes; returns the count, or throws on a read error. */
uint64_t read_some(zip_file_t* f, void* buf, uint64_t n,
                   const std::string& where) {
  uint64_t done = 0;
  while (done < n) {
    const zip_int64_t r =
        zip_fread(f, static_cast<char*>(buf) + done, n - done);
    if (r < 0)
      throw IOError(std::string("[load_npz] expected readable data, got \"") +
                    zip_file_strerror(f) + "\" (" + where + ")");
    if (r == 0) break;
    done += static_cast<uint64_t>(r);
  }
  return done;
}

void read_exact(zip_file_t* f, void* buf, uint64_t n, const char* what,
                const std::string& where) {
  const uint64_t got = read_some(f, buf, n, where);
  if (got != n)
    throw IOError("[load_npz] expected " + std::to_string(n) + " bytes of " +
                  what + ", got " + std::to_string(got) +
                  " (truncated member; " + where + ")");
}

Tensor read_member(zip_t* za, zip_uint64_t index, const zip_stat_t& st,
                   uint64_t archive_bytes, const std::string& where) {
  // Bound the sizes the directory claims before allocating anything.
  const bool stored =
      (st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method == ZIP_CM_STORE;
  const uint64_t limit =
      stored ? archive_bytes : archive_bytes * 1100 + (uint64_t{1} << 20);
  if (st.size > limit)
    throw IOError("[load_npz] expected a member size within the archive's " +
                  std::to_string(archive_bytes) + " bytes, got " +
                  std::to_string(st.size) + " (" + where + ")");
  std::unique_ptr<zip_file_t, ZipFileClose> f(zip_fopen_index(za, index, 0));
  if (!f)
    throw IOError(std::string("[load_npz] expected a readable member, got \"") +
                  zip_strerror(za) + "\" (" + where + ")");
  unsigned char prefix[12];
  read_exact(f.get(), prefix, 8, "the .npy magic", where);
  const size_t prefix_size = detail::npy_prefix_size(prefix, where);
  read_exact(f.get(), prefix + 8, prefix_size - 8, "the .npy header length",
             where);
  const uint64_t hlen = detail::npy_header_length(prefix);
  if (st.size < prefix_size || hlen > st.size - prefix_size ||
      hlen > (uint64_t{1} << 20))
    throw IOError("[load_npz] expected a header length within the member's " +
                  std::to_string(st.size) + " bytes, got " +
                  std::to_string(hlen) + " (" + where + ")");
  std::string text(hlen, '\0');
  read_exact(f.get(), text.data(), hlen, "header", where);
  const detail::NpyHeader h = detail::parse_npy_header(text, where);
  const uint64_t have = st.size - prefix_size - hlen;
  if (have != h.data_bytes)
    throw IOError("[load_npz] expected " + std::to_string(h.data_bytes) +
                  " bytes of data for shape " + h.shape.str() + " " +
                  detail::npy_descr(h.dtype) + ", got " + std::to_string(have) +
                  " (" + where + ")");
  Tensor t = empty(h.shape, h.dtype);
  if (h.data_bytes)
    read_exact(f.get(), t.raw_data(), h.data_bytes, "data", where);
  // Reading past the end makes libzip compare the CRC.
  char extra;
  if (read_some(f.get(), &extra, 1, where) != 0)
    throw IOError("[load_npz] expected the member to end after " +
                  std::to_string(h.data_bytes) + " bytes of data, got more (" +
                  where + ")");
  if (h.dtype == bool_) {
    auto* p = static_cast<uint8_t*>(t.raw_data());
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = p[i] != 0;
  }
  return t;
}

}  // namespace

void save_npz(const std::string& path, const NamedTensors& named,
              bool compressed) {
  check_names(named, "save_npz");
  detail::write_atomically(path, "save_npz", [&](const std::string& tmp) {
    write_zip(tmp, named, compressed);
  });
}

NamedTensors load_npz(const std::string& path) {
  struct stat sb;
  if (::stat(path.c_str(), &sb) != 0 || !S_ISREG(sb.st_mode))
    throw IOError("[load_npz] expected an existing regular file, got " + path);
  int code = 0;
  std::unique_ptr<zip_t, ZipDiscard> za(
      zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code));
  if (!za)
    throw IOError("[load_npz] expected a zip archive, got \"" +
                  zip_code_message(code) + "\" from " + path);
  const zip_int64_t n = zip_get_num_entries(za.get(), 0);
  NamedTensors out;
  std::set<std::string> seen;
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(za.get(), static_cast<zip_uint64_t>(i), 0, &st) != 0 ||
        !(st.valid & ZIP_STAT_NAME) || !(st.valid & ZIP_STAT_SIZE))
      throw IOError("[load_npz] expected a readable directory entry " +
                    std::to_string(i) + ", got \"" + zip_strerror(za.get()) +
                    "\" in " + path);
    std::string name = st.name;
    if (!name.empty() && name.back() == '/') continue;  // a directory
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0)
      name.resize(name.size() - 4);
    const std::string where = "array \"" + name + "\" in " + path;
    if (!seen.insert(name).second)
      throw IOError("[load_npz] expected distinct array names, got \"" + name +
                    "\" twice in " + path);
    out.emplace_back(name,
                     read_member(za.get(), static_cast<zip_uint64_t>(i), st,
                                 static_cast<uint64_t>(sb.st_size), where));
  }
  return out;
}

std::map<std::string, Tensor> load_npz_map(const std::string& path) {
  NamedTensors v = load_npz(path);
  return {std::make_move_iterator(v.begin()), std::make_move_iterator(v.end())};
}

}  // namespace tapeflow::io

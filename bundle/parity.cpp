#include "bundle/parity.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <set>
#include <string_view>
#include <thread>

#include "base/ascii.hpp"
#include "base/digest.hpp"
#include "base/durable_write.hpp"
#include "base/error.hpp"
#include "base/hex.hpp"
#include "base/parallel.hpp"
#include "base/run_tool.hpp"
#include "base/unique_fd.hpp"

namespace podplane::bundle {

namespace fs = std::filesystem;

namespace {

// ---- names -------------------------------------------------------------------------------

bool ends_with_nocase(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && ascii_iequals(text.substr(text.size() - suffix.size()), suffix);
}

bool is_parity_name(std::string_view name) { return ends_with_nocase(name, ".par2"); }
bool is_report_name(std::string_view name) { return name.ends_with(".cdx.json") || name.ends_with(".report.html"); }

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// ".NNN-of-MMM" at the end of a volume name (bundle/create.cpp volume_file): {index, count}.
std::optional<std::pair<int, int>> volume_suffix(std::string_view name) {
  constexpr std::size_t kLength = 11;  // ".001-of-003"
  if (name.size() <= kLength) return std::nullopt;
  std::string_view tail = name.substr(name.size() - kLength);
  if (tail[0] != '.' || tail.substr(4, 4) != "-of-" || !all_digits(tail.substr(1, 3)) || !all_digits(tail.substr(8, 3)))
    return std::nullopt;
  int index = std::stoi(std::string(tail.substr(1, 3)));
  int count = std::stoi(std::string(tail.substr(8, 3)));
  if (count < 2 || index < 1 || index > count) return std::nullopt;
  return std::pair{index, count};
}

// par2's own rule (LoadPacketsFromOtherFiles): NAME.par2, or NAME.volNNN+NNN.par2 / -NNN.
std::string parity_bundle_name(std::string_view name) {
  name.remove_suffix(5);  // ".par2"
  auto dot = name.rfind('.');
  if (dot == std::string_view::npos) return std::string(name);
  std::string_view tail = name.substr(dot + 1);
  if (tail.size() < 3 || !ends_with_nocase(tail.substr(0, 3), "vol")) return std::string(name);
  tail.remove_prefix(3);
  auto sign = tail.find_first_of("+-");
  if (sign == std::string_view::npos || !all_digits(tail.substr(0, sign)) || !all_digits(tail.substr(sign + 1)))
    return std::string(name);
  return std::string(name.substr(0, dot));
}

// ---- PAR2 packets (the format's own spec, "Parity Volume Set Specification 2.0") ------------

constexpr std::string_view kMagic("PAR2\0PKT", 8);
constexpr std::string_view kMainType("PAR 2.0\0Main\0\0\0\0", 16);
constexpr std::string_view kFileDescriptionType("PAR 2.0\0FileDesc", 16);
constexpr std::string_view kRecoveryType("PAR 2.0\0RecvSlic", 16);
constexpr std::uint64_t kHeaderBytes = 64;
// A main packet lists at most 32768 files per group; a description holds one name. Anything
// larger is not from par2 create, and is refused rather than read into memory.
constexpr std::uint64_t kMainPacketLimit = kHeaderBytes + 12 + 2 * 32768 * 16;
constexpr std::uint64_t kDescriptionPacketLimit = 64 << 10;

std::uint64_t little_endian(const unsigned char* bytes, int size) {
  std::uint64_t value = 0;
  for (int i = size - 1; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

bool read_at(int fd, void* into, std::size_t size, std::uint64_t offset) {
  auto* out = static_cast<char*>(into);
  while (size > 0) {
    ssize_t n = ::pread(fd, out, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    out += n;
    size -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
  return true;
}

struct Description {
  std::string set_id;
  std::string file_id;
  std::string md5;  // of the whole file
  std::uint64_t length = 0;
  std::string name;
  fs::path where;
};

struct MainPacket {
  std::string set_id;
  std::uint64_t slice_size = 0;
  std::vector<std::string> recovery_file_ids;
};

// What the valid packets of one bundle's parity files say. A packet counts when its MD5
// matches, as par2 counts it; every occurrence of the magic is looked at, not only those at
// packet boundaries, since par2 too scans past damage for the next packet.
struct PacketScan {
  std::set<std::string> set_ids;
  std::vector<MainPacket> mains;
  std::vector<Description> descriptions;
  std::map<std::string, std::set<std::uint32_t>> recovery_exponents;  // per set: not hash-checked
  std::map<fs::path, int> packets;  // per file: valid critical packets and well-formed recovery ones
};

void read_critical_packet(int fd, const fs::path& file, std::uint64_t offset, const unsigned char* header,
                          std::uint64_t length, PacketScan& scan) {
  const std::string_view type(reinterpret_cast<const char*>(header) + 48, 16);
  const std::uint64_t limit = type == kMainType ? kMainPacketLimit : kDescriptionPacketLimit;
  if (length > limit)
    throw Error(mismatch_message("parity file " + file.string() + " holds an oversize PAR2 packet at byte " +
                                     std::to_string(offset) + ": not made by par2 create",
                                 "at most " + std::to_string(limit) + " bytes", std::to_string(length) + " bytes"));
  std::string packet(length, '\0');
  if (!read_at(fd, packet.data(), packet.size(), offset)) return;
  Hasher md5(DigestAlgorithm::md5);
  md5.update(packet.data() + 32, packet.size() - 32);
  if (md5.finish_raw() != packet.substr(16, 16)) return;  // damaged: par2 skips it as well
  const std::string set_id = packet.substr(32, 16);
  const auto* body = reinterpret_cast<const unsigned char*>(packet.data()) + kHeaderBytes;
  const std::uint64_t body_size = length - kHeaderBytes;
  if (type == kMainType) {
    if (body_size < 12) return;
    MainPacket main{set_id, little_endian(body, 8), {}};
    const std::uint64_t files = little_endian(body + 8, 4);
    if (main.slice_size == 0 || files * 16 > body_size - 12) return;
    for (std::uint64_t f = 0; f < files; ++f) main.recovery_file_ids.push_back(packet.substr(kHeaderBytes + 12 + f * 16, 16));
    scan.mains.push_back(std::move(main));
  } else {
    if (body_size < 56) return;
    Description description{set_id, packet.substr(kHeaderBytes, 16), packet.substr(kHeaderBytes + 16, 16),
                            little_endian(body + 48, 8), packet.substr(kHeaderBytes + 56), file};
    while (!description.name.empty() && description.name.back() == '\0') description.name.pop_back();
    scan.descriptions.push_back(std::move(description));
  }
  scan.set_ids.insert(set_id);
  ++scan.packets[file];
}

void examine_candidate(int fd, const fs::path& file, std::uint64_t offset, std::uint64_t file_size, PacketScan& scan) {
  unsigned char header[kHeaderBytes];
  if (!read_at(fd, header, sizeof header, offset)) return;
  const std::uint64_t length = little_endian(header + 8, 8);
  if (length < kHeaderBytes || length % 4 != 0 || length > file_size - offset) return;
  const std::string_view type(reinterpret_cast<const char*>(header) + 48, 16);
  if (type == kRecoveryType) {
    unsigned char exponent[4];
    if (length >= kHeaderBytes + 4 && read_at(fd, exponent, 4, offset + kHeaderBytes)) {
      scan.recovery_exponents[std::string(reinterpret_cast<const char*>(header) + 32, 16)].insert(
          static_cast<std::uint32_t>(little_endian(exponent, 4)));
      ++scan.packets[file];
    }
    return;
  }
  if (type == kMainType || type == kFileDescriptionType) read_critical_packet(fd, file, offset, header, length, scan);
}

void scan_parity_file(const fs::path& file, PacketScan& scan) {
  // Non-blocking: a FIFO named as a parity file must be refused, not waited on.
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) throw Error("cannot open parity file " + file.string() + ": " + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode))
    throw Error("parity file " + file.string() + " is not a regular file");
  const auto file_size = static_cast<std::uint64_t>(info.st_size);
  scan.packets[file] += 0;
  std::string buffer(1 << 20, '\0');
  std::uint64_t buffer_offset = 0;  // of buffer[0] in the file
  std::size_t kept = 0;             // bytes carried over from the previous block
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer.data() + kept, buffer.size() - kept);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("cannot read parity file " + file.string() + ": " + std::strerror(errno));
    const std::size_t filled = kept + static_cast<std::size_t>(n);
    const std::string_view block(buffer.data(), filled);
    for (auto at = block.find(kMagic); at != std::string_view::npos; at = block.find(kMagic, at + 1))
      examine_candidate(fd.get(), file, buffer_offset + at, file_size, scan);
    if (n == 0) break;
    // The last 7 bytes may start a magic that the next block completes.
    kept = std::min<std::size_t>(filled, kMagic.size() - 1);
    std::memmove(buffer.data(), buffer.data() + filled - kept, kept);
    buffer_offset += filled - kept;
  }
}

// ---- one bundle's recovery set ---------------------------------------------------------------

// Whether `name` is a volume name of bundle `bundle` (FILE, or FILE.NNN-of-MMM): its count, or
// nothing.
std::optional<int> volume_count_of(const std::string& bundle, const std::string& name) {
  if (name == bundle) return 1;
  if (name.size() != bundle.size() + 11 || !name.starts_with(bundle)) return std::nullopt;
  auto suffix = volume_suffix(name);
  return suffix ? std::optional<int>(suffix->second) : std::nullopt;
}

std::string list_files(const std::vector<fs::path>& files) {
  std::string list;
  for (const auto& f : files) list += (list.empty() ? "" : ", ") + f.string();
  return list;
}

// Every name a valid description claims must be a volume of this bundle, of one cut, once.
void check_descriptions(const std::string& bundle, const std::vector<Description>& descriptions) {
  std::map<std::string, std::string> id_of_name;
  std::optional<int> cut;
  for (const auto& d : descriptions) {
    auto count = volume_count_of(bundle, d.name);
    if (!count)
      throw Error(mismatch_message("parity file " + d.where.string() + " claims a file that is not a volume of bundle " +
                                       bundle + ": refused before par2 runs",
                                   "'" + bundle + "' or '" + bundle + ".NNN-of-MMM'", "'" + d.name + "'"));
    if (cut && *cut != *count)
      throw Error(mismatch_message("parity file " + d.where.string() + " claims volumes of two cuts of bundle " + bundle,
                                   std::to_string(*cut) + " volume(s)", std::to_string(*count) + " volume(s), in '" + d.name + "'"));
    cut = count;
    auto [it, fresh] = id_of_name.emplace(d.name, d.file_id);
    if (!fresh && it->second != d.file_id)
      throw Error("parity file " + d.where.string() + " describes two different files named '" + d.name + "'");
  }
}

ParitySet read_parity_set(const std::string& bundle, std::vector<fs::path> files) {
  PacketScan scan;
  for (const auto& file : files) scan_parity_file(file, scan);
  const std::string where = "the parity files of bundle " + bundle + " (" + list_files(files) + ")";
  if (scan.set_ids.size() > 1)
    throw Error(where + " hold " + std::to_string(scan.set_ids.size()) +
                " recovery sets, of different bundles: remove those of the other bundle, or pass --no-parity to read "
                "the volumes without them");
  if (scan.mains.empty() || scan.descriptions.empty())
    throw Error("no usable PAR2 recovery set in " + where +
                ": they are damaged or not PAR2 files; pass --no-parity to read the volumes without them");
  check_descriptions(bundle, scan.descriptions);

  ParitySet set;
  set.bundle = bundle;
  const MainPacket& main = scan.mains.front();
  set.block_size = main.slice_size;
  std::set<std::string> covered(main.recovery_file_ids.begin(), main.recovery_file_ids.end());
  std::set<std::string> described;
  for (const auto& d : scan.descriptions) {
    if (!covered.count(d.file_id) || !described.insert(d.file_id).second) continue;
    set.volumes.push_back(d.name);
    set.described[d.name] = DescribedVolume{d.length, d.md5};
    set.source_blocks += (d.length + main.slice_size - 1) / main.slice_size;
  }
  std::sort(set.volumes.begin(), set.volumes.end());
  if (described.size() < covered.size())
    set.notes.push_back("the parity set of bundle " + bundle + " lacks the description of " +
                        std::to_string(covered.size() - described.size()) + " volume(s): par2 cannot rebuild those");
  set.recovery_blocks = scan.recovery_exponents[main.set_id].size();
  // par2 starts from NAME.par2 where there is one; any file of the set serves.
  std::stable_sort(files.begin(), files.end(), [&](const fs::path& a, const fs::path& b) {
    return (a.filename() == bundle + ".par2") > (b.filename() == bundle + ".par2");
  });
  for (const auto& file : files) {
    std::error_code ec;
    set.bytes += fs::file_size(file, ec);
    if (scan.packets[file] == 0)
      set.notes.push_back("parity file " + file.string() + " holds no valid PAR2 packet (damaged?): the others serve");
  }
  set.files = std::move(files);
  return set;
}

// ---- par2 ------------------------------------------------------------------------------------

// par2 computes on OpenMP threads, which by default spin while they wait for work: on a busy
// machine (a build beside it, ctest -j) that tripled its time here. Sleeping instead costs
// nothing measurable on an idle one.
const std::vector<std::string> kPar2Environment{"OMP_WAIT_POLICY=passive"};

ToolRun par2(const std::vector<std::string>& arguments) {
  std::vector<std::string> argv{"par2"};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  return run_tool(argv, kPar2Environment);
}

// How many blocks par2 cuts the volumes into. Its Reed-Solomon work grows with the bytes times
// the recovery blocks (the percentage of this count): par2's default of 2000 took 51 s of CPU
// (66 s on a busy machine) for 256 MiB at 25% here, 64 a volume 14 s. A damaged spot costs one block or two and a lost volume all of its
// blocks, so what matters is that each volume spans many blocks: 64 a volume (at least 256,
// at most par2's 2000) keeps a scratch to a small share of the recovery data.
int block_count(std::size_t volumes) {
  return static_cast<int>(std::clamp<std::size_t>(64 * volumes, 256, 2000));
}

std::string not_installed(const std::string& why) {
  return why + " needs the par2 program, which is not installed: install Debian's package " + std::string(kPar2Package) +
         " (apt-get install " + kPar2Package + ")";
}

// "You need N more recovery blocks to be able to repair." from par2's verify, or "".
std::string read_par2_need(const std::string& out) {
  const auto at = out.find("You need ");
  if (at == std::string::npos) return "";
  const auto end = out.find('\n', at);
  return out.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

std::string last_words(const ToolRun& run) {
  std::string text = run.err.empty() ? run.out : run.err;
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  auto line = text.rfind('\n');
  return line == std::string::npos ? text : text.substr(line + 1);
}

// A directory of links named as par2 expects them: the parity files (the first as NAME.par2,
// which par2 starts from and names the rest after) and the given volumes the set covers. par2
// reads through the links and writes only here: a damaged volume's link is renamed aside
// (NAME.1) and the rebuilt volume written as a new file, so the given files are never touched.
fs::path lay_out_workspace(const fs::path& dir, const ParitySet& set, const std::map<std::string, fs::path>& volumes) {
  fs::create_directories(dir);
  auto link = [](const fs::path& target, const fs::path& at) {
    std::error_code ec;
    fs::create_symlink(fs::absolute(target), at, ec);
    if (ec) throw Error("cannot link " + target.string() + " into " + at.parent_path().string() + ": " + ec.message());
  };
  const fs::path index = dir / (set.bundle + ".par2");
  for (std::size_t i = 0; i < set.files.size(); ++i)
    link(set.files[i], i == 0 ? index : dir / (set.bundle + ".part" + std::to_string(i) + ".par2"));
  for (const auto& [name, file] : volumes) link(file, dir / name);
  return index;
}

ToolRun run_par2(const std::string& action, const fs::path& workspace, const fs::path& index) {
  return par2({action, "-q", "-B", workspace.string(), index.string()});
}

// The given volumes that are not what the set describes: another size, or (hashed on every
// core) another MD5. A whole bundle costs one read of its volumes here and no par2 at all.
std::vector<std::string> volumes_unlike_their_description(const ParitySet& set,
                                                          const std::map<std::string, fs::path>& given) {
  std::vector<std::pair<std::string, fs::path>> volumes(given.begin(), given.end());
  std::vector<char> unlike(volumes.size(), 0);
  auto errors = on_threads(
      volumes.size(),
      [&](std::size_t i) {
        const auto& [name, file] = volumes[i];
        const DescribedVolume& described = set.described.at(name);
        std::error_code ec;
        unlike[i] = fs::file_size(file, ec) != described.length ||
                    from_hex(file_digest_hex(file, DigestAlgorithm::md5)) != described.md5;
      },
      std::max(2u, std::thread::hardware_concurrency()));
  std::vector<std::string> names;
  for (std::size_t i = 0; i < volumes.size(); ++i)
    if (unlike[i] || errors[i]) names.push_back(volumes[i].first);  // an unreadable volume is damaged too
  return names;
}

// Checks one bundle's volumes against its parity set and has par2 rebuild what is damaged or
// missing.
ParityOutcome check_and_repair(const ParitySet& set, const GivenFiles& given, const fs::path& workspace) {
  ParityOutcome outcome;
  outcome.set = set;
  std::map<std::string, fs::path> by_name;
  for (const auto& volume : given.volumes) {
    const std::string name = volume.filename().string();
    if (set.described.count(name) && by_name.emplace(name, volume).second) outcome.given.push_back(volume);
  }
  for (const auto& name : set.volumes)
    if (!by_name.count(name)) outcome.missing.push_back(name);
  outcome.damaged = volumes_unlike_their_description(set, by_name);
  if (outcome.damaged.empty() && outcome.missing.empty()) return outcome;

  std::vector<std::string> needed = outcome.damaged;
  needed.insert(needed.end(), outcome.missing.begin(), outcome.missing.end());
  std::sort(needed.begin(), needed.end());
  const fs::path index = lay_out_workspace(workspace, set, by_name);
  ToolRun verify = run_par2("verify", workspace, index);
  if (verify.missing) {
    outcome.lost = needed;
    outcome.why_lost = not_installed("rebuilding them from the parity files");
    return outcome;
  }
  if (verify.exit_code > 2)
    throw Error("par2 could not check the parity files of bundle " + set.bundle + " (" + list_files(set.files) +
                "): exit " + std::to_string(verify.exit_code) + ": " + last_words(verify));
  if (verify.exit_code == 2) {
    outcome.lost = needed;
    const std::string need = read_par2_need(verify.out);
    outcome.why_lost = need.empty() ? "par2 cannot rebuild them: " + last_words(verify) : "par2: " + need;
    return outcome;
  }
  if (verify.exit_code == 0) {  // par2 finds them whole after all: nothing to rebuild
    outcome.damaged.clear();
    return outcome;
  }
  ToolRun repair = run_par2("repair", workspace, index);
  bool rebuilt = repair.exit_code == 0;
  for (const auto& name : needed) {
    struct stat info {};
    rebuilt = rebuilt && ::lstat((workspace / name).c_str(), &info) == 0 && S_ISREG(info.st_mode);
  }
  if (!rebuilt) {
    outcome.lost = needed;
    outcome.why_lost = "par2 repair failed (exit " + std::to_string(repair.exit_code) + "): " + last_words(repair);
    return outcome;
  }
  outcome.repaired = true;
  return outcome;
}

}  // namespace

GivenFiles sort_given_files(const std::vector<fs::path>& files) {
  GivenFiles given;
  for (const auto& file : files) {
    const std::string name = file.filename().string();
    if (is_parity_name(name)) given.parity.push_back(file);
    else if (is_report_name(name)) given.companions.push_back(file);
    else given.volumes.push_back(file);
  }
  return given;
}

std::string bundle_name_of(const fs::path& file) {
  const std::string name = file.filename().string();
  if (is_parity_name(name)) return parity_bundle_name(name);
  if (volume_suffix(name)) return name.substr(0, name.size() - 11);
  return name;
}

std::vector<ParitySet> find_parity_sets(const GivenFiles& given) {
  std::map<std::string, std::set<fs::path>> dirs;  // per bundle name: where its parity files may be
  std::map<std::string, std::vector<fs::path>> files;
  std::set<fs::path> seen;
  auto add = [&](const std::string& bundle, const fs::path& file) {
    std::error_code ec;
    fs::path canonical = fs::weakly_canonical(file, ec);
    if (seen.insert(ec ? file : canonical).second) files[bundle].push_back(file);
  };
  auto dir_of = [](const fs::path& file) { return file.parent_path(); };  // "": the working directory
  for (const auto& volume : given.volumes) dirs[bundle_name_of(volume)].insert(dir_of(volume));
  for (const auto& parity : given.parity) {
    add(bundle_name_of(parity), parity);
    dirs[bundle_name_of(parity)].insert(dir_of(parity));
  }
  for (const auto& [bundle, places] : dirs) {
    for (const auto& dir : places) {
      std::error_code ec;
      std::vector<fs::path> found;
      for (fs::directory_iterator it(dir.empty() ? fs::path(".") : dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        // Named as the volumes were: deps.bundle.par2 beside deps.bundle.001-of-003, not ./deps.bundle.par2.
        if (is_parity_name(name) && parity_bundle_name(name) == bundle) found.push_back(dir / name);
      }
      std::sort(found.begin(), found.end());
      for (const auto& file : found) add(bundle, file);
    }
  }
  std::vector<ParitySet> sets;
  for (auto& [bundle, parity_files] : files) sets.push_back(read_parity_set(bundle, std::move(parity_files)));
  return sets;
}

PreparedVolumes prepare_volumes(const std::vector<fs::path>& files, ParityFiles parity) {
  PreparedVolumes prepared;
  GivenFiles given = sort_given_files(files);
  for (const auto& companion : given.companions)
    prepared.notes.push_back(companion.string() + " is a bundle's transfer report, not a volume: not read");
  for (const auto& volume : given.volumes) prepared.sources.push_back({volume, volume, ""});
  if (parity == ParityFiles::ignore) {
    if (!given.parity.empty()) prepared.notes.push_back("parity files not used (--no-parity)");
    return prepared;
  }
  std::vector<ParitySet> sets = find_parity_sets(given);
  for (std::size_t s = 0; s < sets.size(); ++s) {
    for (const auto& note : sets[s].notes) prepared.notes.push_back(note);
    if (!prepared.scratch) prepared.scratch = std::make_unique<ScratchDir>("podplane-parity-");
    const fs::path workspace = prepared.scratch->path() / ("set-" + std::to_string(s + 1));
    ParityOutcome outcome = check_and_repair(sets[s], given, workspace);
    if (outcome.repaired) {
      for (auto& source : prepared.sources) {
        const std::string name = source.file.filename().string();
        if (std::find(outcome.damaged.begin(), outcome.damaged.end(), name) == outcome.damaged.end()) continue;
        source.read_from = workspace / name;
        source.rebuilt = "damaged";
      }
      // Named as the user named the parity files: beside them, no "./" where they had none.
      const fs::path beside = sets[s].files.front().parent_path();
      for (const auto& name : outcome.missing) prepared.sources.push_back({beside / name, workspace / name, "missing"});
    }
    prepared.outcomes.push_back(std::move(outcome));
  }
  return prepared;
}

void require_par2(const std::string& why) {
  if (par2({"-V"}).missing) throw Error(not_installed(why));
}

void remove_stale_parity(const fs::path& bundle) {
  const fs::path dir = bundle.has_parent_path() ? bundle.parent_path() : fs::path(".");
  const std::string name = bundle.filename().string();
  std::error_code ec;
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string entry = it->path().filename().string();
    if (is_parity_name(entry) && parity_bundle_name(entry) == name) stale.push_back(it->path());
  }
  for (const auto& file : stale)
    if (::unlink(file.c_str()) != 0 && errno != ENOENT)
      throw Error("cannot remove the parity file " + file.string() + " of the bundle it replaces: " + std::strerror(errno));
  if (!stale.empty()) sync_directory(dir);
}

SingleLossCover single_loss_cover(const ParitySet& set) {
  SingleLossCover cover;
  cover.largest_bytes = set.recovery_blocks * set.block_size;
  if (set.block_size == 0) return cover;
  std::uint64_t most_blocks = 0;
  std::vector<std::pair<std::uint64_t, std::string>> too_large;
  for (const auto& [name, volume] : set.described) {
    const std::uint64_t blocks = (volume.length + set.block_size - 1) / set.block_size;
    most_blocks = std::max(most_blocks, blocks);
    if (blocks > set.recovery_blocks) too_large.emplace_back(volume.length, name);
  }
  std::sort(too_large.begin(), too_large.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (auto& [length, name] : too_large) cover.too_large.push_back(std::move(name));
  // par2 create -rN makes (source blocks × N + 50) / 100 recovery blocks.
  cover.percent_covering_each = 100;
  for (int percent = 1; percent <= 100; ++percent)
    if ((set.source_blocks * static_cast<std::uint64_t>(percent) + 50) / 100 >= most_blocks) {
      cover.percent_covering_each = percent;
      break;
    }
  return cover;
}

ParityWritten write_parity(const fs::path& bundle, const std::vector<fs::path>& volumes, int percent) {
  // Normalised: par2 names each volume by its path relative to -B, and "/x/." is no prefix of "/x/v".
  const fs::path dir = fs::absolute(bundle).lexically_normal().parent_path();
  const std::string name = bundle.filename().string();
  // Beside the volumes, so that each finished file is renamed into place on one file system.
  ScratchDir scratch(dir, "." + name + ".parity-");
  std::vector<std::string> arguments{"create", "-q", "-b" + std::to_string(block_count(volumes.size())),
                                     "-r" + std::to_string(percent), "-B", dir.string(),
                                     (scratch.path() / (name + ".par2")).string()};
  for (const auto& volume : volumes) arguments.push_back(fs::absolute(volume).lexically_normal().string());
  ToolRun run = par2(arguments);
  if (run.missing) throw Error(not_installed("--parity"));
  if (run.exit_code != 0)
    throw Error("par2 could not make the parity files of bundle " + bundle.string() + " (exit " +
                std::to_string(run.exit_code) + "): " + last_words(run));

  ParityWritten written;
  std::vector<fs::path> made;
  for (const auto& entry : fs::directory_iterator(scratch.path()))
    if (is_parity_name(entry.path().filename().string()) && parity_bundle_name(entry.path().filename().string()) == name)
      made.push_back(entry.path());
  std::sort(made.begin(), made.end(), [&](const fs::path& a, const fs::path& b) {
    return std::make_pair(a.filename() != name + ".par2", a) < std::make_pair(b.filename() != name + ".par2", b);
  });
  for (const auto& file : made) {
    // Non-blocking: a FIFO named as a parity file must be refused, not waited on.
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (!fd || ::fsync(fd.get()) != 0) throw Error("cannot flush " + file.string() + ": " + std::strerror(errno));
    written.bytes += fs::file_size(file);
    const fs::path target = dir / file.filename();
    if (::rename(file.c_str(), target.c_str()) != 0)
      throw Error("cannot rename " + file.string() + " to " + target.string() + ": " + std::strerror(errno));
    written.files.push_back(bundle.has_parent_path() ? bundle.parent_path() / file.filename() : file.filename());
  }
  sync_directory(dir);
  return written;
}

}  // namespace podplane::bundle

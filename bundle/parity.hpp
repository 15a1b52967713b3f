#pragma once
// PAR2 recovery files beside a bundle's volumes (docs/bundle-format.md "Parity"), made, checked
// and used by Debian's par2cmdline run as a child process. No signature covers parity files:
// their packets are read here as hostile input, par2 only ever sees names checked to be volumes
// of the bundle and writes only into a scratch dir, and a volume it rebuilds is judged by the
// signed manifest like any other. Errors are podplane::Error; not thread-safe.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/scratch_dir.hpp"

namespace podplane::bundle {

// The Debian package that provides the par2 program, named by every error that needs it.
inline constexpr const char* kPar2Package = "par2";

// What the paths given to `bundle verify|import|show` are, by name: a glob such as
// `deps.bundle*` takes the bundle's parity files and its transfer report too.
struct GivenFiles {
  std::vector<std::filesystem::path> volumes;
  std::vector<std::filesystem::path> parity;      // NAME.par2, NAME.volNNN+NNN.par2
  std::vector<std::filesystem::path> companions;  // NAME.cdx.json, NAME.report.html: not read
};
GivenFiles sort_given_files(const std::vector<std::filesystem::path>& files);

// The name of the bundle a volume or parity file belongs to: "deps.bundle" for deps.bundle,
// deps.bundle.002-of-003, deps.bundle.par2 and deps.bundle.vol007+008.par2.
std::string bundle_name_of(const std::filesystem::path& file);

// A volume as a parity set describes it.
struct DescribedVolume {
  std::uint64_t length = 0;
  std::string md5;  // raw 16 bytes, of the whole file
};

// One PAR2 recovery set as its valid packets describe it (read, never trusted).
struct ParitySet {
  std::string bundle;                       // the bundle name its volumes share
  std::vector<std::filesystem::path> files;  // its parity files, the one par2 starts from first
  std::vector<std::string> volumes;          // the volume names it covers, sorted
  std::map<std::string, DescribedVolume> described;  // by volume name
  std::uint64_t bytes = 0;                   // of the parity files
  std::uint64_t block_size = 0;              // bytes of each block par2 cut the volumes into
  std::uint64_t source_blocks = 0;           // blocks of the volumes it covers
  std::uint64_t recovery_blocks = 0;         // distinct recovery blocks its files hold
  std::vector<std::string> notes;            // parity files with no valid packet (damaged)
};

// The parity sets of the bundles given: the parity files given, and those named after a given
// volume's bundle in that volume's directory. Error when a parity file is not a regular file,
// claims a file that is not a volume of its bundle, holds an oversize description, or when the
// files of one bundle hold two recovery sets or none at all.
std::vector<ParitySet> find_parity_sets(const GivenFiles& given);

// What a reader of the bundle should do with parity files.
enum class ParityFiles { use, ignore };

// A volume to read: the file given, or the volume par2 rebuilt in its place.
struct VolumeSource {
  std::filesystem::path file;       // as the user knows it (a missing volume: beside its parity)
  std::filesystem::path read_from;  // `file`, or its rebuild in the scratch dir
  std::string rebuilt;              // "damaged" or "missing" when rebuilt from parity, else ""
};

// What the parity set says of one bundle's volumes and what became of them.
struct ParityOutcome {
  ParitySet set;
  std::vector<std::string> damaged;       // volume names not of the size and MD5 the set describes
  std::vector<std::string> missing;       // volume names the set covers that were not given
  bool repaired = false;                  // every damaged and missing volume was rebuilt by par2
  std::vector<std::string> lost;          // damaged or missing and not rebuilt
  std::string why_lost;                   // par2's words, or that par2 is not installed
  std::vector<std::filesystem::path> given;  // the given volumes of this bundle
};

struct PreparedVolumes {
  std::vector<VolumeSource> sources;    // the given volumes, then the rebuilt missing ones
  std::vector<ParityOutcome> outcomes;  // one per parity set
  std::vector<std::string> notes;       // skipped reports, damaged parity files
  std::unique_ptr<ScratchDir> scratch;  // holds the rebuilt volumes while they are read
};

// Sorts the given files and, unless told to ignore parity, checks each bundle that has parity
// files: every volume the set covers must be given, of the size and whole-file MD5 the set
// describes. Where one is not, par2 rebuilds the damaged and missing volumes into a scratch dir
// under $TMPDIR (links to the given files and what par2 writes; removed with the result). A
// bundle whose volumes cannot be rebuilt keeps its outcome's `lost` list: the caller decides.
PreparedVolumes prepare_volumes(const std::vector<std::filesystem::path>& files, ParityFiles parity);

// Error naming the Debian package when par2 is not on PATH.
void require_par2(const std::string& why);

// Removes the parity files of an earlier bundle named `bundle` (NAME.par2, NAME.volNNN+NNN.par2
// beside it): they describe volumes that were just replaced.
void remove_stale_parity(const std::filesystem::path& bundle);

// What a parity set rebuilds of one lost volume on its own. par2 needs one recovery block for
// each block of what is lost, and a bundle's volumes may differ in size (objects are never
// split), so a percentage of the whole may be less than the largest volume.
struct SingleLossCover {
  std::uint64_t largest_bytes = 0;      // the largest volume it rebuilds: its recovery blocks' worth
  std::vector<std::string> too_large;   // volumes it cannot rebuild if lost, largest first
  int percent_covering_each = 0;        // the --parity that rebuilds any one lost volume (at most 100)
};
SingleLossCover single_loss_cover(const ParitySet& set);

struct ParityWritten {
  std::vector<std::filesystem::path> files;  // NAME.par2 first
  std::uint64_t bytes = 0;
};

// Writes NAME.par2 and its recovery files beside `volumes` (in the directory of `bundle`) with
// `percent` % redundancy. par2 writes into a scratch dir there; the files are fsynced and
// renamed into place only once it has succeeded, so no half parity file is ever left.
ParityWritten write_parity(const std::filesystem::path& bundle, const std::vector<std::filesystem::path>& volumes,
                           int percent);

}  // namespace podplane::bundle

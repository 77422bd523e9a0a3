// An output file (stats.json, trace.json, waves.vcd) written whole or not at all. The text goes
// to PATH.tmp in the same folder, which replaces PATH only when every byte was written: a write
// error (a full disk, a quota) is reported, not ignored, and a reader never finds half a file.
#pragma once

#include <fstream>
#include <string>

namespace hcasim {

class output_file {
  public:
    explicit output_file(std::string path);
    ~output_file();  // removes the temporary file unless committed
    output_file(const output_file&) = delete;
    output_file& operator=(const output_file&) = delete;

    // Where to write; false when the temporary file could not be created (see commit).
    std::ostream& stream() { return m_out; }
    bool opened() const { return m_opened; }
    // Flushes, closes and renames into place; false with `problem` ("cannot write PATH: reason")
    // when any of it failed.
    bool commit(std::string& problem);

  private:
    std::string m_path, m_tmp;
    std::ofstream m_out;
    bool m_opened = false, m_committed = false;
    int m_open_errno = 0;
};

// Whether `dir` can take output files: creates it (and its parents) and a probe file in it.
// False with `problem` ("cannot write into DIR: reason") when not.
bool check_output_dir(const std::string& dir, std::string& problem);

// Whether `name` is one plain path component (not empty, no '/', not "." or "..", at most 255
// bytes): what a name must be to become a folder, as a scenario's name does in out/<name>/.
bool is_plain_name(const std::string& name);

}  // namespace hcasim

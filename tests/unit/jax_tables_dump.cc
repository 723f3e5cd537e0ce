// Writes dmlp's tables (tests/unit/jax_tables.h) as DIR/normal.f32 and
// DIR/truncated_normal.f32, little-endian float32, for tests/data/jax_vectors.py
// to list the inputs where dmlp differs from jax.
#include <cstdio>
#include <string>

#include "jax_tables.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: jax_tables_dump DIR\n");
    return 2;
  }
  for (const char* name : {"normal", "truncated_normal"}) {
    const std::vector<float> table = dmlp::testing::DmlpSampleTable(name);
    const std::string path = std::string(argv[1]) + "/" + name + ".f32";
    std::FILE* file = std::fopen(path.c_str(), "wb");
    const bool ok = file != nullptr &&
                    std::fwrite(table.data(), sizeof(float), table.size(), file) == table.size();
    if (file != nullptr && std::fclose(file) != 0) return 1;
    if (!ok) {
      std::fprintf(stderr, "jax_tables_dump: cannot write %s\n", path.c_str());
      return 1;
    }
  }
  return 0;
}

// Prints @huggingface/hub's scanCacheDir of a cache as JSON; warnings (Error objects) become
// {name, message}. Usage: node scan.mjs CACHE_DIR
import { scanCacheDir } from "@huggingface/hub";

const info = await scanCacheDir(process.argv[2]);
console.log(JSON.stringify({
  repos: info.repos.map((r) => ({
    id: r.id,
    revisions: r.revisions.map((v) => ({ commitOid: v.commitOid, refs: v.refs, files: v.files.length })),
  })),
  warnings: info.warnings.map((e) => ({ name: e.name, message: e.message })),
}));

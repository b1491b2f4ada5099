// Fills a Hugging Face cache with @huggingface/hub's own snapshotDownload.
// Usage: HF_ENDPOINT=URL HF_TOKEN=hf_... node snapshot.mjs CACHE_DIR OWNER/NAME [REVISION]
// The library reads neither HF_ENDPOINT nor HF_TOKEN itself: they are passed explicitly.
import { snapshotDownload } from "@huggingface/hub";

const [cacheDir, name, revision = "main"] = process.argv.slice(2);
const path = await snapshotDownload({
  repo: { type: "dataset", name },
  revision,
  cacheDir,
  hubUrl: process.env.HF_ENDPOINT,
  accessToken: process.env.HF_TOKEN || undefined,
});
console.log(path);

package judge

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash"
	"io"
	"os"
	"path/filepath"

	"github.com/aa-grade/aa-grade/internal/atomicfile"
)

// cacheVersion changes when the meaning of a cached reply does.
const cacheVersion = "aa-grade judge cache 1"

// cacheKey names one question: the judge model, the ground truth as written, the entities
// asked about and the prompt text. Each part is length-prefixed so no two questions share a
// key.
func cacheKey(model string, groundTruth []byte, entities []string, system, user string) string {
	h := sha256.New()
	field(h, []byte(cacheVersion))
	field(h, []byte(model))
	field(h, groundTruth)
	_ = binary.Write(h, binary.LittleEndian, uint64(len(entities))) // a hash's Write never fails
	for _, e := range entities {
		field(h, []byte(e))
	}
	field(h, []byte(system))
	field(h, []byte(user))
	return hex.EncodeToString(h.Sum(nil))
}

func field(h hash.Hash, b []byte) {
	_ = binary.Write(h, binary.LittleEndian, uint64(len(b))) // a hash's Write never fails
	h.Write(b)
}

// cacheEntry is one cached reply; the model is kept to make the files readable.
type cacheEntry struct {
	Model string `json:"model"`
	Reply string `json:"reply"`
}

func (j *Judge) cachePath(key string) string {
	return filepath.Join(j.CacheDir, key+".json")
}

// cached returns the reply stored under key, in CacheDir or one of ReadDirs. A file that is
// missing, unreadable or corrupt is a miss: the question is asked again and the file
// rewritten.
func (j *Judge) cached(key string) (string, bool) {
	for _, dir := range append([]string{j.CacheDir}, j.ReadDirs...) {
		if dir == "" {
			continue
		}
		if reply, ok := readCached(filepath.Join(dir, key+".json")); ok {
			return reply, true
		}
	}
	return "", false
}

// readCached reads one cached reply.
func readCached(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer func() { _ = f.Close() }() // read only
	b, err := io.ReadAll(io.LimitReader(f, 2*maxReplyBytes))
	var e cacheEntry
	if err != nil || json.Unmarshal(b, &e) != nil {
		return "", false
	}
	return e.Reply, true
}

// store saves a reply that was read successfully, atomically.
func (j *Judge) store(key, reply string) error {
	if j.CacheDir == "" {
		return nil
	}
	b, err := json.Marshal(cacheEntry{Model: j.Model, Reply: reply})
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(j.cachePath(key), b)
}

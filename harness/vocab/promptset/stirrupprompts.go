package promptset

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
)

// The reference library's texts are not shipped with aa-grade: FromStirrup reads them out of
// the user's own copy of Stirrup 0.1.9 and makes a prompt set of them. Where they are in that
// release is a fact about its files, which stirrupRules records; the words stay in the copy.

// ErrNotStirrup marks a path that holds no Stirrup package.
var ErrNotStirrup = errors.New("no Stirrup package")

// ErrStirrupVersion marks a Stirrup package whose files are not those of release 0.1.9.
var ErrStirrupVersion = errors.New("not Stirrup 0.1.9")

// StirrupVersion is the release FromStirrup reads.
const StirrupVersion = "0.1.9"

// stirrup019 is the sha256 of each file FromStirrup reads, as in release 0.1.9 (tag v0.1.9,
// commit cd7f51f), by its path inside the package.
var stirrup019 = map[string]string{
	"prompts/base_system_prompt.txt":        "e1b45e1abd203e0b0d8d98eaa612eda82bd0254032552292fa5154d2bd637d1b",
	"prompts/message_summarizer.txt":        "b90a13c6b78cb82e36ad3192666a07d439e3d3a5ab1106f480b903bd5321a2c4",
	"prompts/message_summarizer_bridge.txt": "b166df9c7b48e9159e98123242c9ea1cc1a99d4f84e854db7d40baaef9041cb6",
	"core/agent.py":                         "fb2ff35c9abb9865c526e320d88e4b530a737490590b1c7ac3e935d144b8fb98",
	"tools/finish.py":                       "6e23a9a9e3e813c9c5551a20d73b1986fe7c6304e33be135aba4419162ed7273",
	"tools/code_backends/base.py":           "4aa0ce0a9fcc0cc04a9b4dc5d2d74929c57da7c599c9250fb4289991b0f632cc",
	"tools/code_backends/local.py":          "c8520fdacca40765bc529d71f18f8dfe09d2ba2aebf6ba8c8f7ee85cd184381c",
	"utils/text.py":                         "de51a571717343e31c96c6eeef025c886dc2707bd0fd293df2da8e67160b946c",
}

// stirrupText is where one text is in the package: a whole file (no anchors) or the string
// literal after the anchors, found one after another; fields maps each placeholder of
// Python's formatting ({name} in a template file or an f-string) to what stands for it in
// an aa-grade prompt set.
type stirrupText struct {
	file    string
	anchors []string
	fields  map[string]string
}

// The library's code places each text is built from (release 0.1.9).
var (
	stirrupBase = stirrupText{file: "prompts/base_system_prompt.txt",
		fields: map[string]string{"max_turns": "{{max_turns}}"}}
	stirrupAlone = stirrupText{file: "core/agent.py",
		anchors: []string{`"user_input" in self._active_tools`, "else:", "parts.append("}}
	stirrupLeadIn = stirrupText{file: "core/agent.py", anchors: []string{"if self._system_prompt:", "parts.append("},
		fields: map[string]string{"self._system_prompt": ""}}
	stirrupErrorHead = stirrupText{file: "tools/code_backends/base.py", anchors: []string{"# Error case", "content ="},
		fields: map[string]string{"result.error_kind": "{kind}",
			"truncate_msg(result.stderr, MAX_LENGTH_SHELL_STDERR)": "{details}"}}
	stirrupErrorTail = stirrupText{file: "tools/code_backends/base.py",
		anchors: []string{"# Error case", "content +=", "content +="}}
	stirrupTimeout = stirrupText{file: "tools/code_backends/local.py",
		anchors: []string{"except TimeoutError:", "stderr="}, fields: map[string]string{"timeout": "{{command_timeout}}"}}
	stirrupTimeoutKind = stirrupText{file: "tools/code_backends/local.py",
		anchors: []string{"except TimeoutError:", "error_kind="}}
	stirrupFailureKind = stirrupText{file: "tools/code_backends/local.py",
		anchors: []string{"except TimeoutError:", "except Exception as exc:", "error_kind="}}
	stirrupMissing = stirrupText{file: "tools/finish.py",
		anchors: []string{"if missing:", "content="}} // fields: the path list
	stirrupInvalidArgs = stirrupText{file: "core/agent.py",
		anchors: []string{"except ValidationError:", "ToolResult(content="}}
)

// stirrupKeys are the keys taken from the library as they are; the system prompt, the shell's
// error results and the finish refusals are put together from several places (FromStirrup).
var stirrupKeys = map[string]stirrupText{
	keyShellDescription: {file: "tools/code_backends/base.py", anchors: []string{"description=description"}},
	keyShellCmdDescription: {file: "tools/code_backends/base.py",
		anchors: []string{"class CodeExecutionParams", "description="}},
	keyShellParamsDesc: {file: "tools/code_backends/base.py",
		anchors: []string{"class CodeExecutionParams(BaseModel):"}},
	keyFinishParamsDesc:  {file: "tools/finish.py", anchors: []string{"class FinishParams(BaseModel):"}},
	keyFinishDescription: {file: "tools/finish.py", anchors: []string{"SIMPLE_FINISH_TOOL", "description="}},
	keyFinishReasonDesc:  {file: "tools/finish.py", anchors: []string{"reason: Annotated[str, Field(description="}},
	keyFinishPathsDesc:   {file: "tools/finish.py", anchors: []string{"paths: Annotated[", "Field(description="}},
	keyLastTurn:          {file: "core/agent.py", anchors: []string{"def _num_turns_remaining_msg", "content="}},
	keyTurnsLeft: {file: "core/agent.py", anchors: []string{"def _num_turns_remaining_msg", "content=", "content="},
		fields: map[string]string{"number_of_turns_remaining": "{{turns_left}}"}},
	keyContinue: {file: "core/agent.py", anchors: []string{"not next_turn_will_show_warning",
		"UserMessage(content="}},
	keySummaryRequest: {file: "prompts/message_summarizer.txt"},
	keySummaryBridge: {file: "prompts/message_summarizer_bridge.txt",
		fields: map[string]string{"summary": "{{summary}}"}},
	keySummaryAck: {file: "core/agent.py", anchors: []string{"acknowledgement_msg = UserMessage(content="}},
	keyUnknownTool: {file: "core/agent.py", anchors: []string{"which is not in the tools list", "ToolResult(content="},
		fields: map[string]string{"tool_call.name": "{{tool}}"}},
	keyFinishTwoCalls: {
		file:    "core/agent.py",
		anchors: []string{"if reject_all_finish_calls and tool_call.name in self._finish_tools:", "content="},
		fields: map[string]string{"tool_call.name": "{{finish_tool}}",
			"sorted(set(finish_call_names))": "['{{finish_tool}}']"},
	},
	keyShellResult: {file: "tools/code_backends/base.py", anchors: []string{"# Success case", "content ="},
		fields: map[string]string{"result.exit_code": "{{exit_code}}",
			"truncate_msg(result.stdout, MAX_LENGTH_SHELL_STDOUT)": "{{stdout}}",
			"truncate_msg(result.stderr, MAX_LENGTH_SHELL_STDERR)": "{{stderr}}"}},
	keyTruncationNotice: {file: "utils/text.py", anchors: []string{"msg[: max_length // 2]", "+"},
		fields: map[string]string{"msg_len": "{{total}}", "max_length": "{{output_limit}}"}},
	keyShellInvalidArguments:  stirrupInvalidArgs,
	keyFinishInvalidArguments: stirrupInvalidArgs,
}

// adapterRole stands for the system prompt the published runs' adapter gave the library,
// which is not public: aa-grade's words for the role it is reported to set.
const adapterRole = "You are an expert site reliability engineer (SRE) investigating a production incident in a " +
	"Kubernetes cluster. " +
	"You work offline, from a snapshot of the cluster's telemetry recorded during the incident, with a bash shell " +
	"in a sandbox. " +
	"Be rigorous: every conclusion must rest on evidence you found in the data."

// FromStirrup makes a prompt set of the texts of the user's copy of Stirrup 0.1.9 at dir: a
// source tree (the package under src/stirrup), an installed package folder (stirrup, or the
// site-packages folder holding it) or a wheel (.whl). Every file it reads must be that
// release's (ErrStirrupVersion names those that are not). The set has the library's texts for
// every key that has one; the adapter's task prompt and the refusals Stirrup does not make
// are the built-in set's, and the adapter's system prompt stands after the library's lead-in
// in aa-grade's words.
func FromStirrup(dir string) (*Set, error) {
	pkg, closer, err := openStirrup(dir)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return fromStirrupFS(pkg, stirrup019)
}

// fromStirrupFS reads the set from a package whose files must have the sums given.
func fromStirrupFS(pkg fs.FS, sums map[string]string) (*Set, error) {
	files, err := readStirrupFiles(pkg, sums)
	if err != nil {
		return nil, err
	}
	get := func(t stirrupText) (string, error) { return t.read(files) }
	p := Builtin()
	for _, key := range slices.Sorted(maps.Keys(stirrupKeys)) {
		text, err := get(stirrupKeys[key])
		if err == nil {
			p, err = p.with(key, text)
		}
		if err != nil {
			return nil, fmt.Errorf("stirrup %s: %w", key, err)
		}
	}
	composed, err := composeStirrup(get)
	if err != nil {
		return nil, err
	}
	for _, key := range slices.Sorted(maps.Keys(composed)) {
		if p, err = p.with(key, composed[key]); err != nil {
			return nil, fmt.Errorf("stirrup %s: %w", key, err)
		}
	}
	return p, nil
}

// composeStirrup puts together the texts built from several places of the library: the system
// prompt (base prompt, the sentence on not reaching the user, the lead-in to the caller's
// instructions, then the adapter's role), the shell's error results (the error envelope with
// each backend's kind and details) and the refusal for files that do not exist.
func composeStirrup(get func(stirrupText) (string, error)) (map[string]string, error) {
	texts := map[string]string{}
	parts := map[string]stirrupText{"base": stirrupBase, "alone": stirrupAlone, "lead": stirrupLeadIn,
		"head": stirrupErrorHead, "tail": stirrupErrorTail, "timeout": stirrupTimeout, "timeoutKind": stirrupTimeoutKind,
		"failureKind": stirrupFailureKind}
	for name, t := range parts {
		s, err := get(t)
		if err != nil {
			return nil, fmt.Errorf("stirrup %s: %w", name, err)
		}
		texts[name] = s
	}
	envelope := func(kind, details string) string {
		return strings.NewReplacer("{kind}", kind, "{details}", details).Replace(texts["head"]) + texts["tail"]
	}
	missing := func(path string) (string, error) {
		return get(stirrupText{file: stirrupMissing.file, anchors: stirrupMissing.anchors,
			fields: map[string]string{"missing": "['" + path + "']"}})
	}
	noOutput, err := missing("{{output_file}}")
	if err != nil {
		return nil, fmt.Errorf("stirrup missing files: %w", err)
	}
	pathMissing, _ := missing("{{path}}") // the same text, read once already
	return map[string]string{
		keySystem:            texts["base"] + texts["alone"] + texts["lead"] + adapterRole,
		keyShellTimeout:      envelope(texts["timeoutKind"], texts["timeout"]),
		keyShellError:        envelope(texts["failureKind"], "{{error}}"),
		keyFinishNoOutput:    noOutput,
		keyFinishPathMissing: pathMissing,
	}, nil
}

// read finds the text in files and maps its placeholders; a placeholder with no mapping is an
// error, so a changed file never leaks a Python expression into a prompt.
func (t stirrupText) read(files map[string]string) (string, error) {
	src := files[t.file]
	text := src
	if len(t.anchors) > 0 {
		var err error
		if text, err = pyStringAfter(src, t.anchors...); err != nil {
			return "", fmt.Errorf("%s: %w", t.file, err)
		}
	}
	return mapPyFields(text, t.fields)
}

// mapPyFields replaces each {field} of a Python format string or f-string by its mapping.
func mapPyFields(text string, fields map[string]string) (string, error) {
	var out strings.Builder
	for {
		open := strings.IndexByte(text, '{')
		if open < 0 {
			out.WriteString(text)
			return out.String(), nil
		}
		end := strings.IndexByte(text[open:], '}')
		if end < 0 {
			return "", fmt.Errorf("an unclosed { in %.60q", text)
		}
		field := text[open+1 : open+end]
		to, ok := fields[field]
		if !ok {
			return "", fmt.Errorf("unexpected field {%s}", field)
		}
		out.WriteString(text[:open] + to)
		text = text[open+end+1:]
	}
}

// readStirrupFiles reads every file sums names and checks it: a missing file means no
// package, any file whose sum differs is named.
func readStirrupFiles(pkg fs.FS, sums map[string]string) (map[string]string, error) {
	files := map[string]string{}
	var differ []string
	for _, name := range slices.Sorted(maps.Keys(sums)) {
		b, err := fs.ReadFile(pkg, name)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrNotStirrup, name, err)
		}
		sum := sha256.Sum256(b)
		if hex.EncodeToString(sum[:]) != sums[name] {
			differ = append(differ, name)
		}
		files[name] = string(b)
	}
	if len(differ) > 0 {
		return nil, fmt.Errorf("%w: %s differ from that release's", ErrStirrupVersion, strings.Join(differ, ", "))
	}
	return files, nil
}

// openStirrup finds the package at dir: a wheel, or a folder that is the package or holds it
// (at stirrup/ or src/stirrup/). The closer releases a wheel.
func openStirrup(dir string) (fs.FS, io.Closer, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("%w at %s: %w", ErrNotStirrup, dir, err)
	}
	if !info.IsDir() {
		z, err := zip.OpenReader(dir)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %s is neither a folder nor a wheel: %w", ErrNotStirrup, dir, err)
		}
		pkg, err := fs.Sub(z, "stirrup")
		if err != nil {
			_ = z.Close() // read only
			return nil, nil, fmt.Errorf("%w in %s: %w", ErrNotStirrup, dir, err)
		}
		return pkg, z, nil
	}
	root := os.DirFS(dir)
	for _, sub := range []string{".", "stirrup", "src/stirrup"} {
		if _, err := fs.Stat(root, path.Join(sub, "core/agent.py")); err == nil {
			pkg, err := fs.Sub(root, sub)
			return pkg, io.NopCloser(nil), err
		}
	}
	return nil, nil, fmt.Errorf("%w in %s (looked for core/agent.py there, in stirrup/ and in src/stirrup/)",
		ErrNotStirrup, dir)
}

package deploy

import (
	"encoding/json"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, ...
	args string
	line int
}

// stage is the instructions from one FROM to the next.
type stage struct {
	base, name string
	flags      []string // --platform=... of FROM
	inst       []instruction
}

// parseDockerfile splits a Dockerfile into stages, and returns the default
// values of the ARGs before the first FROM. It understands what the
// Dockerfile of this repository uses: comments, backslash continuations and
// the default escape character.
func parseDockerfile(t *testing.T, src string) ([]stage, map[string]string) {
	t.Helper()
	var (
		stages  []stage
		globals = map[string]string{}
		pending strings.Builder
		start   int
	)
	for i, raw := range strings.Split(src, "\n") {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "#") || (line == "" && pending.Len() == 0) {
			continue
		}
		if pending.Len() == 0 {
			start = i + 1
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			pending.WriteString(cont + " ")
			continue
		}
		pending.WriteString(line)
		full := pending.String()
		pending.Reset()

		cmd, args, _ := strings.Cut(full, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.Join(strings.Fields(args), " "), line: start}
		if in.cmd == "FROM" {
			var s stage
			fields := strings.Fields(in.args)
			for len(fields) > 0 && strings.HasPrefix(fields[0], "--") {
				s.flags, fields = append(s.flags, fields[0]), fields[1:]
			}
			switch {
			case len(fields) == 1:
				s.base = fields[0]
			case len(fields) == 3 && strings.EqualFold(fields[1], "AS"):
				s.base, s.name = fields[0], fields[2]
			default:
				t.Fatalf("Dockerfile:%d: cannot parse FROM %s", in.line, in.args)
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			if in.cmd != "ARG" {
				t.Fatalf("Dockerfile:%d: %s before the first FROM", in.line, in.cmd)
			}
			name, value, _ := strings.Cut(in.args, "=")
			globals[name] = value
			continue
		}
		last := &stages[len(stages)-1]
		last.inst = append(last.inst, in)
	}
	if pending.Len() > 0 {
		t.Fatal("Dockerfile ends in a continuation line")
	}
	return stages, globals
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.inst {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// args returns the names the stage declares with ARG.
func (s stage) args() []string {
	var names []string
	for _, in := range s.all("ARG") {
		name, _, _ := strings.Cut(in.args, "=")
		names = append(names, name)
	}
	return names
}

// TestDockerfile checks the image recipe structurally: a Go builder stage
// that builds with the Makefile's build target and sets the port-53
// capability, and a distroless nonroot final stage that runs /coredns with
// the OCI labels; both base images are build arguments, and nothing needs
// the network but what the arguments name. TestDockerfileBuilds builds it.
func TestDockerfile(t *testing.T) {
	src := string(readRepoFile(t, "Dockerfile"))
	stages, globals := parseDockerfile(t, src)
	if len(stages) != 2 {
		t.Fatalf("Dockerfile has %d stages, want a builder and a final stage", len(stages))
	}
	builder, final := stages[0], stages[1]

	// Builder: the Go release go.mod's toolchain line names (the one make
	// builds with), cross-compiling natively.
	goVersion := regexp.MustCompile(`(?m)^toolchain go(\d+\.\d+\.\d+)`).FindSubmatch(readRepoFile(t, "go.mod"))
	if goVersion == nil {
		t.Fatal("no toolchain line in go.mod")
	}
	if m := regexp.MustCompile(`(?m)^GO_TOOLCHAIN \?= (\S+)$`).FindSubmatch(readRepoFile(t, "Makefile")); m == nil || string(m[1]) != "go"+string(goVersion[1]) {
		t.Errorf("the Makefile's GO_TOOLCHAIN is %q, go.mod's toolchain go%s", m, goVersion[1])
	}
	if want := "golang:" + string(goVersion[1]); globals["GO_IMAGE"] != want {
		t.Errorf("ARG GO_IMAGE defaults to %q, want %q", globals["GO_IMAGE"], want)
	}
	if builder.base != "${GO_IMAGE}" || builder.name == "" {
		t.Errorf("builder stage is FROM %s AS %q, want FROM ${GO_IMAGE} AS <name>", builder.base, builder.name)
	}
	if !slices.Contains(builder.flags, "--platform=$BUILDPLATFORM") {
		t.Errorf("builder stage lacks --platform=$BUILDPLATFORM, so multi-platform builds would emulate the compiler")
	}

	// The binary is built by `make build`, so its flags cannot drift from the
	// Makefile's, and its version stamp comes from the build arguments.
	var buildRun *instruction
	for _, in := range builder.all("RUN") {
		if strings.Contains(in.args, "go build") {
			t.Errorf("Dockerfile:%d: calls go build directly; use make build so the flags match the Makefile", in.line)
		}
		if strings.Contains(in.args, "make build") {
			buildRun = &in
		}
	}
	if buildRun == nil {
		t.Fatal("the builder stage does not run make build")
	}
	for _, want := range []string{
		`make build VERSION="$VERSION" COMMIT="$COMMIT"`,
		"GOOS=$TARGETOS GOARCH=$TARGETARCH",
		"go run ./internal/filecap/cmd/setcap build/coredns",
		"--mount=type=cache,target=/root/.cache/go-build",
	} {
		if !strings.Contains(buildRun.args, want) {
			t.Errorf("Dockerfile:%d: the build step lacks %q:\n%s", buildRun.line, want, buildRun.args)
		}
	}
	for _, arg := range []string{"VERSION", "COMMIT", "TARGETOS", "TARGETARCH", "GOPROXY"} {
		if !slices.Contains(builder.args(), arg) {
			t.Errorf("builder stage does not declare ARG %s", arg)
		}
	}
	// Offline with the base images given: no package manager, and no
	// frontend image for BuildKit to fetch.
	if slices.ContainsFunc(builder.all("RUN"), func(in instruction) bool { return strings.Contains(in.args, "apt-get") }) {
		t.Error("the builder stage installs packages, which needs the network")
	}
	if regexp.MustCompile(`(?m)^#\s*syntax\s*=`).MatchString(src) {
		t.Error("the Dockerfile names a frontend image (# syntax=), which BuildKit fetches from a registry")
	}
	workdirs := builder.all("WORKDIR")
	if len(workdirs) != 1 {
		t.Fatalf("builder stage has %d WORKDIRs, want 1", len(workdirs))
	}

	// Final stage: distroless, nonroot, only the binary.
	if globals["BASE_IMAGE"] != "gcr.io/distroless/static-debian12:nonroot" || final.base != "${BASE_IMAGE}" {
		t.Errorf("final stage is FROM %s (BASE_IMAGE defaults to %q), want FROM ${BASE_IMAGE} defaulting to gcr.io/distroless/static-debian12:nonroot",
			final.base, globals["BASE_IMAGE"])
	}
	users := final.all("USER")
	if len(users) == 0 || !strings.HasPrefix(users[len(users)-1].args, "65532") {
		t.Errorf("final stage does not set USER 65532 (distroless nonroot): %v", users)
	}
	wantCopy := "--from=" + builder.name + " " + path.Join(workdirs[0].args, "build/coredns") + " /coredns"
	copies := final.all("COPY")
	if len(copies) != 1 || copies[0].args != wantCopy {
		t.Errorf("final stage copies %v, want exactly COPY %s", copies, wantCopy)
	}
	entry := final.all("ENTRYPOINT")
	var argv []string
	if len(entry) != 1 || json.Unmarshal([]byte(entry[0].args), &argv) != nil || !slices.Equal(argv, []string{"/coredns"}) {
		t.Errorf("final stage ENTRYPOINT = %v, want exactly [\"/coredns\"] in exec form", entry)
	}
	var exposed []string
	for _, in := range final.all("EXPOSE") {
		exposed = append(exposed, strings.Fields(in.args)...)
	}
	// A port without a protocol is TCP.
	if !slices.Contains(exposed, "53") && !slices.Contains(exposed, "53/tcp") {
		t.Errorf("final stage does not EXPOSE 53/tcp (exposes %v)", exposed)
	}
	if !slices.Contains(exposed, "53/udp") {
		t.Errorf("final stage does not EXPOSE 53/udp (exposes %v)", exposed)
	}

	// OCI labels, fed by build arguments declared in the final stage (ARGs
	// are scoped to their stage).
	labels := strings.Join(func() []string {
		var l []string
		for _, in := range final.all("LABEL") {
			l = append(l, in.args)
		}
		return l
	}(), " ")
	for label, arg := range map[string]string{
		"org.opencontainers.image.version":  "VERSION",
		"org.opencontainers.image.revision": "COMMIT",
		"org.opencontainers.image.source":   "SOURCE",
	} {
		if !strings.Contains(labels, label+`="$`+arg+`"`) {
			t.Errorf("final stage has no label %s=\"$%s\"", label, arg)
		}
		if !slices.Contains(final.args(), arg) {
			t.Errorf("final stage does not declare ARG %s for label %s", arg, label)
		}
	}

	// The build context leaves out outputs and .git (the version comes from
	// the build arguments; a foreign .git can break go's VCS stamping).
	ignored := strings.Fields(string(readRepoFile(t, ".dockerignore")))
	for _, want := range []string{".git", "build", "release"} {
		if !slices.Contains(ignored, want) {
			t.Errorf(".dockerignore does not exclude %s", want)
		}
	}
}

// TestMakefileBuildFlags pins what the Dockerfile and Makefile.release rely on
// when they call make build: a static, trimmed build whose version and commit
// come from the VERSION and COMMIT variables and whose output is BINARY.
func TestMakefileBuildFlags(t *testing.T) {
	makefile := string(readRepoFile(t, "Makefile"))
	ldflags := regexp.MustCompile(`(?m)^LDFLAGS\s*:?=\s*(.*)$`).FindStringSubmatch(makefile)
	if ldflags == nil {
		t.Fatal("Makefile has no LDFLAGS")
	}
	for _, want := range []string{"-s -w", "-X main.version=$(VERSION)", "-X github.com/coredns/coredns/coremain.GitCommit=$(COMMIT)"} {
		if !strings.Contains(ldflags[1], want) {
			t.Errorf("Makefile LDFLAGS lack %q: %s", want, ldflags[1])
		}
	}
	recipe := regexp.MustCompile(`(?m)^build:.*\n((?:\t.*\n)+)`).FindStringSubmatch(makefile)
	if recipe == nil {
		t.Fatal("Makefile has no build target")
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-ldflags '$(LDFLAGS)'", "-o $(BINARY)"} {
		if !strings.Contains(recipe[1], want) {
			t.Errorf("Makefile build recipe lacks %q:\n%s", want, recipe[1])
		}
	}

	release := string(readRepoFile(t, "Makefile.release"))
	if !strings.Contains(release, "-f Makefile build") || strings.Contains(release, "go build") {
		t.Error("Makefile.release must build with the Makefile's build target, not its own go build")
	}
}

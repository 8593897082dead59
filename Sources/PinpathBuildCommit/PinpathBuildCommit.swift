// The GitCommit plugin (Plugins/GitCommit) writes this target's only code before each build: the C function
// `pinpath_build_commit`, which PinpathSupport reads weakly through CLinuxShims (`PinpathVersion.commit`).
// Nothing imports this module, so a new commit recompiles this target alone and relinks.

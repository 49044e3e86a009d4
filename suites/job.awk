# job.awk - what a suite job file's comment lines say, read the same way by suites/run (case_setup)
# and suites/check-csv (suites/lib.sh sets JOB_AWK to this text).
#
# A tag is a comment line "; KEY: VALUE" (KEY lower-case letters, digits and '-'); the first of a key wins.
# job_tag: record LINE's tag in TAG[KEY]; 1 if LINE is a tag line, 0 if not.
function job_tag(line, tag,   k, v) {
	if (line !~ /^;[[:space:]]*[a-z0-9-]+:/) return 0
	k = line; sub(/^;[[:space:]]*/, "", k); v = k
	sub(/:.*/, "", k); sub(/^[^:]*:[[:space:]]*/, "", v); sub(/[[:space:]]+$/, "", v)
	if (!(k in tag)) tag[k] = v
	return 1
}
# job_expectation: the expectation that applies to a run on a target named NAME ("" when unnamed; a
# device target when DEVICE is 1): expect-NAME, then expect-device, then expect; "" when none applies.
# Its forms: "error=ERRNO" (fio's job fails with it) and "status=0xSSSS" (the controller's first answer).
function job_expectation(tag, name, device) {
	if (name != "" && tag["expect-" name] != "") return tag["expect-" name]
	if (device && tag["expect-device"] != "") return tag["expect-device"]
	return tag["expect"]
}

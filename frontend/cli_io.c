/* What the commands share for files: loading models and CSVs (rows, or the time steps of
 * sequences) with errors that name the file, the CSV header guess, atomic outputs (or stdout),
 * and printable copies of file text. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "otc/file.h"
#include "otc/limits.h"
#include "otc/model.h"

const char *otc_cli_printable(const char *text, char *buf, size_t len) {
    if (len == 0) return buf;
    size_t n = strlen(text ? text : "");
    bool cut = n >= len;
    if (cut) { /* end in "..." at a character boundary, not inside a UTF-8 sequence */
        n = len > 4 ? len - 4 : len - 1;
        while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80) n--;
    }
    memcpy(buf, text ? text : "", n);
    buf[n] = '\0';
    otc_text_printable(buf);
    if (cut && len > 4) memcpy(buf + n, "...", 4);
    return buf;
}

/* The library's message, with the file name put in front when the message lacks it, so
 * every error the user sees says which file is at fault. */
int otc_cli_error_file(const char *cmd, const char *path) {
    const char *msg = otc_last_error();
    size_t cap = strlen(msg) + 1;
    char *safe = malloc(cap);
    if (!safe) return otc_cli_error(cmd, "%s: out of memory", path);
    otc_cli_printable(msg, safe, cap);
    int rc;
    if (strstr(msg, path)) {
        rc = otc_cli_error(cmd, "%s", safe);
    } else {
        char spath[512];
        rc = otc_cli_error(cmd, "%s: %s", otc_cli_printable(path, spath, sizeof spath),
                           *safe ? safe : "failed");
    }
    free(safe);
    return rc;
}

/* A directory opens fine with fopen on Linux; say what is wrong instead of "read error". */
static int not_a_regular_file(const char *cmd, const char *path) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        char spath[512];
        return otc_cli_error(cmd, "%s: is a directory, not a file",
                             otc_cli_printable(path, spath, sizeof spath));
    }
    return 0;
}

int otc_cli_load_model(const char *cmd, const char *path, otc_graph **out) {
    *out = NULL;
    if (not_a_regular_file(cmd, path)) return OTC_EXIT_USAGE;
    if (otc_model_load(path, out) != OTC_OK) return otc_cli_error_file(cmd, path);
    return 0;
}

int otc_cli_check_memory(const char *cmd, const char *model, const otc_graph *g, int64_t batch,
                         unsigned copies, bool jit, const char *doing) {
    if (jit) batch = (batch + 15) / 16 * 16; /* up to 16 lanes */
    uint64_t each = otc_graph_value_bytes(g, batch);
    uint64_t need = copies && each > UINT64_MAX / copies ? UINT64_MAX : each * copies;
    char what[700], sm[512];
    snprintf(what, sizeof what, "%s: %s at batch %lld", otc_cli_printable(model, sm, sizeof sm),
             doing, (long long)batch);
    if (otc_memory_check(need, what) != OTC_OK) return otc_cli_error(cmd, "%s", otc_last_error());
    return 0;
}

/* Is the cell [s, e) a number as the CSV reader would take it (blanks and quotes aside)? */
static bool cell_is_number(const char *s, const char *e) {
    while (s < e && (*s == ' ' || *s == '\t' || *s == '"')) s++;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '"' || e[-1] == '\r')) e--;
    if (s == e) return false;
    char tmp[64];
    size_t n = (size_t)(e - s);
    if (n >= sizeof tmp) return false;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    char *end;
    strtod(tmp, &end);
    return *end == '\0';
}

/* Splits one line [s, e) into at most max cells; flags which are numbers. */
static int line_cells(const char *s, const char *e, bool *numeric, int max) {
    int n = 0;
    const char *cell = s;
    for (const char *p = s;; p++) {
        if (p == e || *p == ',') {
            if (n < max) numeric[n] = cell_is_number(cell, p);
            n++;
            cell = p + 1;
            if (p == e) break;
        }
    }
    return n < max ? n : max;
}

bool otc_cli_csv_has_header(const char *text, size_t len) {
    const char *end = text + len;
    const char *l1 = text;
    const char *e1 = memchr(l1, '\n', len);
    if (!e1) e1 = end;
    bool num1[256], num2[256];
    int n1 = line_cells(l1, e1, num1, 256);
    bool any_number = false;
    for (int i = 0; i < n1; i++) any_number |= num1[i];
    if (!any_number) return true;
    if (e1 == end) return false;
    const char *l2 = e1 + 1;
    const char *e2 = memchr(l2, '\n', (size_t)(end - l2));
    if (!e2) e2 = end;
    int n2 = line_cells(l2, e2, num2, 256);
    for (int i = 0; i < n1 && i < n2; i++)
        if (!num1[i] && num2[i]) return true;
    return false;
}

/* The whole file in memory (NUL-terminated), bounded; NULL after printing an error. */
static char *read_all(const char *cmd, const char *path, size_t *len) {
    if (not_a_regular_file(cmd, path)) return NULL;
    char *text = NULL;
    if (otc_read_text_file(path, OTC_MAX_CSV_BYTES, &text, len) != OTC_OK) {
        otc_cli_error_file(cmd, path);
        return NULL;
    }
    return text;
}

/* The model's recorded columns by name, when the file has a header and no list was given. */
static int match_model(const char *cmd, const char *path, const char *text, size_t len,
                       const otc_cli_csv *opt, bool header, char **by_name) {
    *by_name = NULL;
    if (opt->had_header) *opt->had_header = header;
    if (!header || !opt->model || opt->features) return 0;
    return otc_cli_match_columns(cmd, path, text, len, opt->model, opt->model_path, opt->sequence,
                                 by_name);
}

int otc_cli_load_csv(const char *cmd, const char *path, const otc_cli_csv *opt, otc_dataset **out) {
    *out = NULL;
    size_t len = 0;
    char *text = read_all(cmd, path, &len);
    if (!text) return OTC_EXIT_USAGE;
    otc_csv_options o = {
        .targets = opt->targets, .features = opt->features, .skip_targets = opt->skip_targets};
    o.header = opt->header < 0 ? otc_cli_csv_has_header(text, len) : opt->header != 0;
    char *by_name = NULL;
    int rc = match_model(cmd, path, text, len, opt, o.header, &by_name);
    if (rc) {
        free(text);
        return rc;
    }
    if (by_name) o.features = by_name;
    otc_status st = otc_csv_parse(text, len, path, &o, out);
    free(by_name);
    free(text);
    if (st != OTC_OK) return otc_cli_error_file(cmd, path);
    return 0;
}

int otc_cli_load_seq_csv(const char *cmd, const char *path, const otc_cli_csv *opt,
                         otc_seq_dataset **out) {
    *out = NULL;
    size_t len = 0;
    char *text = read_all(cmd, path, &len);
    if (!text) return OTC_EXIT_USAGE;
    otc_csv_options o = {.targets = opt->targets,
                         .features = opt->features,
                         .skip_targets = opt->skip_targets,
                         .sequence = opt->sequence};
    o.header = opt->header < 0 ? otc_cli_csv_has_header(text, len) : opt->header != 0;
    /* no --sequence: the id column the model was trained with, when the file has it */
    char *recorded = NULL;
    otc_cli_csv with_seq = *opt;
    if (!opt->sequence && opt->model && o.header) {
        recorded = otc_cli_recorded_sequence(opt->model, text, len);
        o.sequence = with_seq.sequence = recorded;
    }
    char *by_name = NULL;
    int rc = match_model(cmd, path, text, len, &with_seq, o.header, &by_name);
    if (rc) {
        free(recorded);
        free(text);
        return rc;
    }
    if (by_name) o.features = by_name;
    /* the parser refuses cells that are not finite numbers and files without rows, so every
     * sequence has steps; the check stays as the one statement of what a run needs */
    otc_status st = otc_seq_csv_parse(text, len, path, &o, out);
    free(by_name);
    free(recorded);
    free(text);
    if (st == OTC_OK) st = otc_seq_dataset_check(*out, path);
    if (st != OTC_OK) {
        otc_seq_dataset_free(*out);
        *out = NULL;
        /* a word where a number should be is most often a sequence id column read as data */
        if (!o.sequence && strstr(otc_last_error(), "cannot read")) {
            char why[600];
            snprintf(why, sizeof why, "%s", otc_last_error());
            otc_fail(st, "%s (if that column names each row's sequence, give --sequence COL)", why);
        }
        return otc_cli_error_file(cmd, path);
    }
    return 0;
}

int otc_cli_needs_recurrent(const char *cmd, const char *model, const char *option) {
    char sm[512];
    return otc_cli_error(cmd,
                         "%s is for recurrent models; %s has no Delay node, so its rows are "
                         "independent samples (leave out %s)",
                         option, otc_cli_printable(model, sm, sizeof sm), option);
}

int otc_cli_check_bptt(const char *cmd, const char *model, bool recurrent, bool train, int bptt) {
    char sm[512];
    if (bptt < 0) return otc_cli_error(cmd, "--bptt must be at least 1 step, not %d", bptt);
    if (bptt > 0 && !recurrent) return otc_cli_needs_recurrent(cmd, model, "--bptt");
    if (bptt > 0 && !train)
        return otc_cli_error(cmd, "--bptt goes with --train (the time steps one training step "
                                  "runs through)");
    if (train && recurrent && bptt == 0)
        return otc_cli_error(cmd,
                             "%s is recurrent: a training step runs through time; give --bptt K "
                             "(the time steps it runs through)",
                             otc_cli_printable(model, sm, sizeof sm));
    return 0;
}

int otc_cli_write_output(const char *cmd, const char *path, const void *data, size_t len) {
    if (!path || !strcmp(path, "-")) {
        if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0)
            return otc_cli_error(cmd, "writing to standard output failed: %s", strerror(errno));
        return 0;
    }
    if (otc_write_file_atomic(path, data, len) != OTC_OK) return otc_cli_error_file(cmd, path);
    return 0;
}

int otc_cli_check_writable(const char *cmd, const otc_cli_file *out, int n_out) {
    for (int i = 0; i < n_out; i++) {
        const char *path = out[i].path;
        if (!path || !strcmp(path, "-")) continue;
        char sp[512], probe[4200];
        otc_cli_printable(path, sp, sizeof sp);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            return otc_cli_error(cmd, "%s %s is a directory", out[i].option, sp);
        if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) continue; /* written in place */
        if (snprintf(probe, sizeof probe, "%s.tmp-%ld-probe", path, (long)getpid()) >=
            (int)sizeof probe)
            return otc_cli_error(cmd, "%s %s: name too long", out[i].option, sp);
        int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0600);
        if (fd < 0)
            return otc_cli_error(cmd, "%s %s: cannot be written there: %s", out[i].option, sp,
                                 strerror(errno));
        close(fd);
        unlink(probe);
    }
    return 0;
}

/* Where two of a command's files are one, which is the output that would overwrite (or
 * collide with) the other: refused before anything is read or written. */
int otc_cli_check_files(const char *cmd, const otc_cli_file *in, int n_in, const otc_cli_file *out,
                        int n_out) {
    for (int i = 0; i < n_out; i++) {
        if (!out[i].path || !strcmp(out[i].path, "-")) continue;
        for (int j = 0; j < n_in + i; j++) {
            const otc_cli_file *other = j < n_in ? &in[j] : &out[j - n_in];
            if (!other->path || !otc_same_file(out[i].path, other->path)) continue;
            char sp[512];
            return otc_cli_error(cmd, "%s and %s name the same file (%s): refusing to %s",
                                 out[i].option, other->option,
                                 otc_cli_printable(out[i].path, sp, sizeof sp),
                                 j < n_in ? "overwrite an input" : "write it twice");
        }
    }
    return 0;
}

/* CSV reading into an otc_dataset: optional header, any one-character delimiter, chosen target
 * and feature columns, class-label targets mapped to indices; errors name file, line, column. */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otc/data.h"
#include "otc/text.h"
#include "otc/file.h"

/* Longest cell text quoted back in an error message. */
#define SHOWN_CELL 40

typedef struct {
    char *text; /* NUL-terminated, CR stripped, inside the parse buffer */
    int number; /* 1-based line number in the file */
} csv_line;

/* Strings of one class-label target column, mapped to indices in order of first appearance.
 * Open addressing keeps a column of many distinct labels linear rather than quadratic. */
typedef struct {
    char **labels;  /* by class index, owned */
    int count, cap; /* labels used / allocated */
    int *slots;     /* hash slots: class index or -1 */
    int n_slots;    /* a power of two, kept at most half full */
} label_map;

static char *dup_string(const char *s) {
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c) memcpy(c, s, n);
    return c;
}

static uint32_t hash_string(const char *s) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void label_map_free(label_map *m) {
    for (int i = 0; i < m->count; i++) free(m->labels[i]);
    free(m->labels);
    free(m->slots);
    memset(m, 0, sizeof *m);
}

static otc_status label_map_rehash(label_map *m, int n_slots) {
    int *slots = malloc((size_t)n_slots * sizeof *slots);
    if (!slots) return otc_fail(OTC_ERR_NOMEM, "out of memory for class labels");
    for (int i = 0; i < n_slots; i++) slots[i] = -1;
    for (int c = 0; c < m->count; c++) {
        uint32_t h = hash_string(m->labels[c]) & (uint32_t)(n_slots - 1);
        while (slots[h] >= 0) h = (h + 1) & (uint32_t)(n_slots - 1);
        slots[h] = c;
    }
    free(m->slots);
    m->slots = slots;
    m->n_slots = n_slots;
    return OTC_OK;
}

/* The class index of `label`, adding it as the next class if it is new. */
static otc_status label_map_index(label_map *m, const char *label, int *index) {
    if (m->n_slots == 0 || 2 * (m->count + 1) > m->n_slots) {
        if (m->n_slots > INT_MAX / 4) return otc_fail(OTC_ERR_FORMAT, "too many class labels");
        otc_status st = label_map_rehash(m, m->n_slots ? 2 * m->n_slots : 16);
        if (st) return st;
    }
    uint32_t mask = (uint32_t)(m->n_slots - 1), h = hash_string(label) & mask;
    for (; m->slots[h] >= 0; h = (h + 1) & mask) {
        if (strcmp(m->labels[m->slots[h]], label) == 0) {
            *index = m->slots[h];
            return OTC_OK;
        }
    }
    if (m->count == m->cap) {
        int cap = m->cap ? 2 * m->cap : 8;
        char **labels = realloc(m->labels, (size_t)cap * sizeof *labels);
        if (!labels) return otc_fail(OTC_ERR_NOMEM, "out of memory for class labels");
        m->labels = labels;
        m->cap = cap;
    }
    char *copy = dup_string(label);
    if (!copy) return otc_fail(OTC_ERR_NOMEM, "out of memory for class labels");
    m->labels[m->count] = copy;
    m->slots[h] = m->count;
    *index = m->count++;
    return OTC_OK;
}

/* The class index of `label`, or -1 when it has none. */
static int label_map_find(const label_map *m, const char *label) {
    if (m->n_slots == 0) return -1;
    uint32_t mask = (uint32_t)(m->n_slots - 1), h = hash_string(label) & mask;
    for (; m->slots[h] >= 0; h = (h + 1) & mask)
        if (strcmp(m->labels[m->slots[h]], label) == 0) return m->slots[h];
    return -1;
}

static bool is_blank(char c, char delimiter) {
    return (c == ' ' || c == '\t') && c != delimiter;
}

/* Trims blanks and one pair of surrounding double quotes (as spreadsheets and R write header
 * names and labels) in place. */
static char *clean_cell(char *s, char delimiter) {
    while (is_blank(*s, delimiter)) s++;
    size_t n = strlen(s);
    while (n > 0 && is_blank(s[n - 1], delimiter)) s[--n] = '\0';
    if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
        s[n - 1] = '\0';
        s++;
    }
    return s;
}

static int count_cells(const char *line, char delimiter) {
    int n = 1;
    for (; *line; line++) n += *line == delimiter;
    return n;
}

/* Splits a line of exactly n cells in place (the caller has counted them). */
static void split_cells(char *line, char delimiter, char **cells, int n) {
    for (int i = 0; i < n; i++) {
        char *end = strchr(line, delimiter);
        if (end) *end = '\0';
        cells[i] = clean_cell(line, delimiter);
        line = end ? end + 1 : line + strlen(line);
    }
}

/* Cuts the buffer into non-blank lines (blank lines anywhere are skipped, which tolerates
 * trailing newlines) and strips a UTF-8 byte-order mark and CRs before LF. */
static otc_status split_lines(char *buf, size_t len, const char *name, char delimiter,
                              csv_line **lines_out, int *n_out) {
    size_t n_newlines = 0;
    for (size_t i = 0; i < len; i++) n_newlines += buf[i] == '\n';
    if (n_newlines >= (size_t)INT_MAX) return otc_fail(OTC_ERR_FORMAT, "%s: too many lines", name);
    csv_line *lines = malloc((n_newlines + 1) * sizeof *lines);
    if (!lines) return otc_fail(OTC_ERR_NOMEM, "%s: out of memory", name);
    int n = 0, number = 0;
    size_t pos = 0;
    if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0) pos = 3;
    for (;;) {
        number++;
        char *start = buf + pos;
        char *nl = memchr(start, '\n', len - pos);
        size_t line_len = nl ? (size_t)(nl - start) : len - pos;
        if (memchr(start, '\0', line_len)) {
            free(lines);
            return otc_fail(OTC_ERR_FORMAT, "%s:%d: a NUL byte (is this a binary file?)", name,
                            number);
        }
        start[line_len] = '\0'; /* the '\n', or the terminator after the last line */
        if (line_len > 0 && start[line_len - 1] == '\r') start[--line_len] = '\0';
        bool blank = true;
        for (const char *c = start; *c && blank; c++) blank = is_blank(*c, delimiter);
        if (!blank) lines[n++] = (csv_line){start, number};
        if (!nl) break;
        pos = (size_t)(nl - buf) + 1;
    }
    *lines_out = lines;
    *n_out = n;
    return OTC_OK;
}

/* Resolves a comma-separated list of column names or 0-based indices into cols[]. */
static otc_status resolve_columns(const char *list, const char *what, char **names, int n_cols,
                                  const char *file, int **cols_out, int *n_out) {
    size_t len = strlen(list);
    char *copy = malloc(len + 1);
    int max = (int)(len / 2 + 1); /* items are not empty: at most one per comma, plus one */
    int *cols = malloc((size_t)max * sizeof *cols);
    char **items = malloc((size_t)max * sizeof *items);
    /* Names to columns through a hash map, and a flag per column listed: a list of k names
     * over n columns costs O(k + n), not O(k n). first[] is a name's first column, count[]
     * how many columns share it. */
    label_map by_name = {0};
    int *first = malloc(((size_t)n_cols + 1) * sizeof *first);
    int *count = calloc((size_t)n_cols + 1, sizeof *count);
    bool *listed = calloc((size_t)n_cols + 1, sizeof *listed);
    otc_status st = copy && cols && items && first && count && listed
                        ? OTC_OK
                        : otc_fail(OTC_ERR_NOMEM, "out of memory");
    for (int c = 0; c < n_cols && !st; c++) {
        int k = 0;
        st = label_map_index(&by_name, names[c], &k);
        if (!st && count[k]++ == 0) first[k] = c;
    }
    if (st) {
        free(copy);
        free(cols);
        free(items);
        free(first);
        free(count);
        free(listed);
        label_map_free(&by_name);
        return st;
    }
    memcpy(copy, list, len + 1);
    int n = 0, n_items = 0;
    if (otc_list_split(copy, false, items, max, &n_items) != OTC_OK) {
        char why[64];
        snprintf(why, sizeof why, "%s", otc_last_error());
        st = otc_fail(OTC_ERR_ARG, "%s: %s column list \"%s\": %s", file, what, list, why);
    }
    for (int i = 0; i < n_items && !st; i++) {
        char *t = clean_cell(items[i], ',');
        if (!*t) { /* "" */
            st = otc_fail(OTC_ERR_ARG, "%s: %s column list \"%s\": item %d is empty", file, what,
                          list, i + 1);
            break;
        }
        int found = -1, matches = 0;
        int k = label_map_find(&by_name, t);
        if (k >= 0) {
            found = first[k];
            matches = count[k];
        }
        if (matches > 1) {
            st = otc_fail(OTC_ERR_ARG, "%s: %s column \"%s\" is ambiguous (%d columns)", file, what,
                          t, matches);
            break;
        }
        if (found < 0) {
            char *end;
            errno = 0;
            long idx = strtol(t, &end, 10);
            bool digits = *t >= '0' && *t <= '9' && *end == '\0' && errno == 0;
            if (!digits) {
                st = otc_fail(OTC_ERR_ARG, "%s: no %s column named \"%s\"", file, what, t);
                break;
            }
            if (idx >= n_cols) {
                st = otc_fail(OTC_ERR_ARG,
                              "%s: %s column index %ld is out of range (%d columns, "
                              "indices from 0)",
                              file, what, idx, n_cols);
                break;
            }
            found = (int)idx;
        }
        if (listed[found]) {
            st = otc_fail(OTC_ERR_ARG, "%s: %s column \"%s\" is listed twice", file, what,
                          names[found]);
            break;
        }
        listed[found] = true;
        cols[n++] = found;
    }
    free(copy);
    free(items);
    free(first);
    free(count);
    free(listed);
    label_map_free(&by_name);
    if (st) {
        free(cols);
        return st;
    }
    *cols_out = cols;
    *n_out = n;
    return OTC_OK;
}

static otc_status set_names(char **dst, char **names, const int *cols, int n) {
    for (int i = 0; i < n; i++) {
        char *copy = dup_string(names[cols[i]]);
        if (!copy) return otc_fail(OTC_ERR_NOMEM, "out of memory for column names");
        free(dst[i]);
        dst[i] = copy;
    }
    return OTC_OK;
}

/* Everything one parse owns, freed on every path by parse_state_free. */
typedef struct {
    char *buf;
    csv_line *lines;
    char **cells;
    char **names;
    int n_cols;
    int *targets, *features;
    bool *is_target;   /* per column */
    label_map *labels; /* per target; used where categorical[t] */
    bool *categorical;
    int n_targets;
    bool skip_targets;
    int seq_col;       /* the sequence column, or -1 */
    label_map seq_ids; /* its texts, in order of first appearance */
    otc_dataset *d;
} parse_state;

static void parse_state_free(parse_state *s) {
    free(s->buf);
    free(s->lines);
    free(s->cells);
    if (s->names) {
        for (int c = 0; c < s->n_cols; c++) free(s->names[c]);
        free(s->names);
    }
    free(s->targets);
    free(s->features);
    free(s->is_target);
    if (s->labels) {
        for (int t = 0; t < s->n_targets; t++) label_map_free(&s->labels[t]);
        free(s->labels);
    }
    free(s->categorical);
    label_map_free(&s->seq_ids);
    otc_dataset_free(s->d);
}

/* What a cell reads as: a finite float, a number that is not one (nan, inf, or beyond the
 * float range), or a word (anything strtod does not read whole). */
typedef enum { CELL_NUMBER, CELL_NONFINITE, CELL_WORD } cell_kind;

static cell_kind classify(const char *cell, float *value) {
    char *end;
    double d = strtod(cell, &end);
    if (end == cell || *end != '\0') return CELL_WORD;
    if (!isfinite(d) || fabs(d) > FLT_MAX) return CELL_NONFINITE;
    *value = (float)d;
    return CELL_NUMBER;
}

static otc_status not_a_number(const char *name, int line, int col, const char *col_name,
                               const char *cell, const char *why) {
    return otc_fail(OTC_ERR_FORMAT,
                    "%s:%d: column %d (%s): cannot read \"%.*s%s\" as a finite "
                    "number%s",
                    name, line, col + 1, col_name, SHOWN_CELL, cell,
                    strlen(cell) > SHOWN_CELL ? "..." : "", why);
}

/* One rule for a whole target column: it holds class labels when no cell reads as a number
 * (not even nan or inf), and numbers otherwise, every one of them finite. A column mixing
 * the two is an error at its first word, naming a line that holds a number. */
static otc_status fill_target(parse_state *s, const char *name, int first, int t, char **cells) {
    otc_dataset *d = s->d;
    int col = s->targets[t], T = s->n_targets;
    int first_number = -1, first_bad = -1; /* rows */
    for (int r = 0; r < d->rows; r++) {
        float v = 0;
        cell_kind k = classify(cells[(size_t)r * (size_t)T + (size_t)t], &v);
        if (k != CELL_WORD && first_number < 0) first_number = r;
        if (k != CELL_NUMBER && first_bad < 0) first_bad = r;
    }
    s->categorical[t] = first_number < 0;
    for (int r = 0; r < d->rows; r++) {
        const char *cell = cells[(size_t)r * (size_t)T + (size_t)t];
        float *dst = &d->y[(size_t)r * (size_t)T + (size_t)t];
        int line = s->lines[first + r].number;
        if (s->categorical[t]) {
            int index = 0;
            otc_status st = label_map_index(&s->labels[t], cell, &index);
            if (st) return otc_fail_context(st, "%s:%d", name, line);
            *dst = (float)index;
        } else if (r == first_bad) {
            float v;
            if (classify(cell, &v) == CELL_NONFINITE)
                return not_a_number(name, line, col, s->names[col], cell, "");
            char why[96];
            snprintf(
                why, sizeof why,
                " (line %d reads as a number; a column holds numbers or word labels, not both)",
                s->lines[first + first_number].number);
            return not_a_number(name, line, col, s->names[col], cell, why);
        } else {
            classify(cell, dst);
        }
    }
    return OTC_OK;
}

static otc_status parse_rows(parse_state *s, const char *name, char delimiter, int first,
                             int n_features) {
    otc_dataset *d = s->d;
    /* Target cells are kept until every row is read: their column's kind depends on all. */
    char **tcells = malloc(((size_t)d->rows * (size_t)s->n_targets + 1) * sizeof *tcells);
    if (!tcells) return otc_fail(OTC_ERR_NOMEM, "%s: out of memory", name);
    otc_status st = OTC_OK;
    for (int r = 0; r < d->rows && !st; r++) {
        const csv_line *line = &s->lines[first + r];
        int found = count_cells(line->text, delimiter);
        if (found != s->n_cols) {
            st = otc_fail(OTC_ERR_FORMAT, "%s:%d: expected %d cells, found %d", name, line->number,
                          s->n_cols, found);
            break;
        }
        split_cells(line->text, delimiter, s->cells, s->n_cols);
        d->lines[r] = line->number;
        if (s->seq_col >= 0) {
            const char *id = s->cells[s->seq_col];
            if (!*id)
                st = otc_fail(OTC_ERR_FORMAT, "%s:%d: column %d (%s): empty sequence id", name,
                              line->number, s->seq_col + 1, s->names[s->seq_col]);
            else
                st = label_map_index(&s->seq_ids, id, &d->seq[r]);
            if (st) break;
        }
        for (int j = 0; j < n_features + s->n_targets && !st; j++) {
            bool is_target = j >= n_features;
            int col = is_target ? s->targets[j - n_features] : s->features[j];
            const char *cell = s->cells[col];
            if (!*cell)
                st = otc_fail(OTC_ERR_FORMAT, "%s:%d: column %d (%s): empty cell", name,
                              line->number, col + 1, s->names[col]);
            else if (is_target)
                tcells[(size_t)r * (size_t)s->n_targets + (size_t)(j - n_features)] = s->cells[col];
            else if (classify(cell, &d->x[(size_t)r * (size_t)n_features + (size_t)j]) !=
                     CELL_NUMBER)
                st = not_a_number(name, line->number, col, s->names[col], cell, "");
        }
    }
    for (int t = 0; t < s->n_targets && !st && !s->skip_targets; t++)
        st = fill_target(s, name, first, t, tcells);
    free(tcells);
    return st;
}

otc_status otc_csv_parse(const char *text, size_t len, const char *name, const otc_csv_options *opt,
                         otc_dataset **out) {
    if (!out) return otc_fail(OTC_ERR_ARG, "otc_csv_parse: out is NULL");
    *out = NULL;
    if (!text && len) return otc_fail(OTC_ERR_ARG, "otc_csv_parse: text is NULL");
    if (!name) name = "<csv>";
    otc_csv_options defaults = {0};
    if (!opt) opt = &defaults;
    char delimiter = opt->delimiter ? opt->delimiter : ',';
    if (delimiter == '\n' || delimiter == '\r' || delimiter == '"')
        return otc_fail(OTC_ERR_ARG, "%s: delimiter %d cannot separate cells", name,
                        (int)delimiter);

    parse_state s = {.skip_targets = opt->skip_targets, .seq_col = -1};
    otc_status st = OTC_OK;
    int n_lines = 0;
    s.buf = malloc(len + 1);
    if (!s.buf) return otc_fail(OTC_ERR_NOMEM, "%s: out of memory", name);
    if (len) memcpy(s.buf, text, len);
    s.buf[len] = '\0';
    st = split_lines(s.buf, len, name, delimiter, &s.lines, &n_lines);
    if (st) goto done;
    if (n_lines == 0) {
        st = otc_fail(OTC_ERR_FORMAT, "%s: empty file (no rows)", name);
        goto done;
    }

    /* The first line fixes the column count, and names the columns when it is a header. */
    s.n_cols = count_cells(s.lines[0].text, delimiter);
    s.cells = malloc((size_t)s.n_cols * sizeof *s.cells);
    s.names = calloc((size_t)s.n_cols, sizeof *s.names);
    if (!s.cells || !s.names) {
        st = otc_fail(OTC_ERR_NOMEM, "%s: out of memory", name);
        goto done;
    }
    if (opt->header) split_cells(s.lines[0].text, delimiter, s.cells, s.n_cols);
    for (int c = 0; c < s.n_cols; c++) {
        char generated[24];
        snprintf(generated, sizeof generated, "c%d", c);
        s.names[c] = dup_string(opt->header && *s.cells[c] ? s.cells[c] : generated);
        if (!s.names[c]) {
            st = otc_fail(OTC_ERR_NOMEM, "%s: out of memory", name);
            goto done;
        }
    }
    int first = opt->header ? 1 : 0;
    if (n_lines - first == 0) {
        st = otc_fail(OTC_ERR_FORMAT, "%s: no data rows after the header", name);
        goto done;
    }

    int n_features = 0;
    if (opt->targets) {
        st = resolve_columns(opt->targets, "target", s.names, s.n_cols, name, &s.targets,
                             &s.n_targets);
        if (st) goto done;
    } else if (opt->last_target) {
        s.targets = malloc(sizeof *s.targets);
        if (!s.targets) {
            st = otc_fail(OTC_ERR_NOMEM, "%s: out of memory", name);
            goto done;
        }
        s.targets[0] = s.n_cols - 1;
        s.n_targets = 1;
    }
    /* A flag per column (not a search of the target list per column: many columns stay
     * linear). */
    s.is_target = calloc((size_t)s.n_cols + 1, sizeof *s.is_target);
    if (!s.is_target) {
        st = otc_fail(OTC_ERR_NOMEM, "%s: out of memory", name);
        goto done;
    }
    for (int t = 0; t < s.n_targets; t++) s.is_target[s.targets[t]] = true;
    if (opt->sequence) {
        int *cols = NULL, n_seq = 0;
        st = resolve_columns(opt->sequence, "sequence", s.names, s.n_cols, name, &cols, &n_seq);
        if (st) goto done;
        s.seq_col = n_seq == 1 ? cols[0] : -1;
        free(cols);
        if (n_seq != 1) {
            st =
                otc_fail(OTC_ERR_ARG, "%s: the sequence column is one column, not %d", name, n_seq);
            goto done;
        }
        if (s.is_target[s.seq_col]) {
            st = otc_fail(OTC_ERR_ARG, "%s: column \"%s\" is both the sequence and a target", name,
                          s.names[s.seq_col]);
            goto done;
        }
    }
    if (opt->features) {
        st = resolve_columns(opt->features, "feature", s.names, s.n_cols, name, &s.features,
                             &n_features);
        if (st) goto done;
        for (int i = 0; i < n_features; i++) {
            if (s.is_target[s.features[i]]) {
                st = otc_fail(OTC_ERR_ARG, "%s: column \"%s\" is both a target and a feature", name,
                              s.names[s.features[i]]);
                goto done;
            }
            if (s.features[i] == s.seq_col) {
                st = otc_fail(OTC_ERR_ARG, "%s: column \"%s\" is both the sequence and a feature",
                              name, s.names[s.seq_col]);
                goto done;
            }
        }
    }
    if (!opt->features || n_features == 0) {
        free(s.features);
        s.features = malloc((size_t)s.n_cols * sizeof *s.features);
        if (!s.features) {
            st = otc_fail(OTC_ERR_NOMEM, "%s: out of memory", name);
            goto done;
        }
        n_features = 0;
        for (int c = 0; c < s.n_cols; c++)
            if (!s.is_target[c] && c != s.seq_col) s.features[n_features++] = c;
    }
    s.labels = calloc((size_t)s.n_targets + 1, sizeof *s.labels);
    s.categorical = calloc((size_t)s.n_targets + 1, sizeof *s.categorical);
    s.d = otc_dataset_new(n_lines - first, n_features, s.n_targets);
    if (s.d) {
        s.d->lines = malloc(((size_t)s.d->rows + 1) * sizeof *s.d->lines);
        if (s.seq_col >= 0) s.d->seq = malloc(((size_t)s.d->rows + 1) * sizeof *s.d->seq);
    }
    if (!s.labels || !s.categorical || !s.d || !s.d->lines || (s.seq_col >= 0 && !s.d->seq)) {
        st = s.d ? otc_fail(OTC_ERR_NOMEM, "%s: out of memory", name)
                 : otc_fail_context(OTC_ERR_NOMEM, "%s", name);
        goto done;
    }
    st = set_names(s.d->feature_names, s.names, s.features, n_features);
    if (!st) st = set_names(s.d->target_names, s.names, s.targets, s.n_targets);
    if (!st) st = parse_rows(&s, name, delimiter, first, n_features);
    if (!st && s.seq_col >= 0) {
        /* the ids' texts move to the dataset */
        s.d->seq_ids = s.seq_ids.labels;
        s.d->n_seq_ids = s.seq_ids.count;
        s.seq_ids.labels = NULL;
        s.seq_ids.count = 0;
        if (!(s.d->seq_name = dup_string(s.names[s.seq_col])))
            st = otc_fail(OTC_ERR_NOMEM, "%s: out of memory", name);
    }
    if (!st) {
        *out = s.d;
        s.d = NULL;
    }
done:
    parse_state_free(&s);
    return st;
}

otc_status otc_csv_load(const char *path, const otc_csv_options *opt, otc_dataset **out) {
    if (!out) return otc_fail(OTC_ERR_ARG, "otc_csv_load: out is NULL");
    *out = NULL;
    if (!path) return otc_fail(OTC_ERR_ARG, "otc_csv_load: path is NULL");
    char *text = NULL;
    size_t len = 0;
    otc_status st = otc_read_text_file(path, OTC_MAX_CSV_BYTES, &text, &len);
    if (!st) st = otc_csv_parse(text, len, path, opt, out);
    free(text);
    return st;
}

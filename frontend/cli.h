/* What every otc subcommand shares: exit codes, option parsing with --help, error printing. */
#ifndef OTC_CLI_H
#define OTC_CLI_H

#include <stdbool.h>
#include <stdint.h>

enum {
    OTC_EXIT_OK = 0,   /* success */
    OTC_EXIT_GOAL = 1, /* the job ran but did not reach its goal */
    OTC_EXIT_USAGE = 2 /* bad usage or bad input */
};

/* Each subcommand is a file cmd_<name>.c defining these two (the table is generated). */
#define OTC_COMMAND_DECL(name)                                                                     \
    int otc_cmd_##name(int argc, char **argv);                                                     \
    extern const char otc_cmd_##name##_summary[];

typedef enum {
    OTC_OPT_FLAG,   /* bool, no value */
    OTC_OPT_STRING, /* const char *, not empty ("--out=" is an error naming the option) */
    OTC_OPT_TEXT,   /* const char *, may be empty (--checkpoint-prefix "", --title "") */
    OTC_OPT_INT,    /* int */
    OTC_OPT_U64,    /* uint64_t */
    OTC_OPT_FLOAT,  /* double */
    OTC_OPT_RANGE   /* int within a range: dest is an otc_opt_range (OTC_RANGE) */
} otc_opt_kind;

/* An integer option's destination and the values it may take, which its errors state. */
typedef struct {
    int *value;
    int min, max;
} otc_opt_range;
#define OTC_RANGE(var, lo, hi) (&(otc_opt_range){&(var), (lo), (hi)})

typedef struct {
    const char *name; /* "--epochs" (a short alias after a comma: "--output,-o") */
    otc_opt_kind kind;
    void *dest;
    const char *help; /* shown by --help; "VALUE: text" puts VALUE in the synopsis */
} otc_opt;

/* Parses argv[1..] (argv[0] is the subcommand name). Options may come in any order; the rest
 * are positionals, at most max_pos of them (exactly min_pos required). Returns -1 when --help
 * was printed (exit 0), OTC_EXIT_USAGE after printing an error with a usage hint, or 0. */
int otc_cli_parse(const char *cmd, const char *synopsis, const otc_opt *opts, int n_opts, int argc,
                  char **argv, const char **pos, int min_pos, int max_pos);

/* Was option `opt` on the command line (as "--opt X" or "--opt=X")? Options whose default is
 * "not given" are told apart this way from any value the user could type. */
bool otc_cli_given(int argc, char **argv, const char *opt);

/* Strict decimal integers (digits only, an optional sign for int; no spaces, no trailing
 * text, nothing out of range): what OTC_OPT_INT and OTC_OPT_U64 accept. */
bool otc_cli_parse_int(const char *text, int *out);
bool otc_cli_parse_u64(const char *text, uint64_t *out);

/* "otc CMD: message" on stderr; returns OTC_EXIT_USAGE for `return otc_cli_error(...)`. */
int otc_cli_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* True when stderr is a terminal (progress is shown only then). */
bool otc_cli_interactive(void);

/* ---- shared by the commands that read models and data (cli_io.c, cli_progress.c) ---- */
#include <stddef.h>

#include "otc/data.h"
#include "otc/graph.h"

/* A copy of text from a file that is safe to print on a terminal (control bytes and escape
 * sequences become '?'), cut to fit buf. */
const char *otc_cli_printable(const char *text, char *buf, size_t len);

/* Prints otc_last_error() as "otc CMD: PATH: message" (PATH only when the message does not
 * name it already) and returns OTC_EXIT_USAGE. */
int otc_cli_error_file(const char *cmd, const char *path);

/* Loads a .otm model; on failure prints "otc CMD: <message naming the file>" and returns
 * OTC_EXIT_USAGE (0 on success). */
int otc_cli_load_model(const char *cmd, const char *path, otc_graph **out);

/* --train-only PREFIXES: freezes every trainable parameter whose name starts with none of the
 * comma-separated prefixes (fine-tuning a part of a model, e.g. its classifier). A prefix that
 * names no trainable parameter is an error naming it and the parameters there are (exit 2);
 * NULL spec leaves the model as it is. frozen (otc_graph_size(g) flags, or NULL) tells which
 * parameters it froze, for the caller to thaw before saving. 0 on success. */
int otc_cli_train_only(const char *cmd, const char *model, otc_graph *g, const char *spec,
                       bool *frozen);

/* Refuses before any executor is built (error naming the model, exit 2) when the model's
 * values at `batch` rows, `copies` times over, exceed the memory limit (otc/limits.h); `jit`
 * counts the batch rounded up to whole vectors, as the JIT lays it out. 0 when it fits. */
int otc_cli_check_memory(const char *cmd, const char *model, const otc_graph *g, int64_t batch,
                         unsigned copies, bool jit, const char *doing);

typedef struct {
    const char *targets;  /* column list or NULL */
    const char *features; /* column list or NULL (every non-target column) */
    int header;           /* 1 yes, 0 no, -1 guess from the first two lines */
    bool skip_targets;    /* the target columns are only left out: their cells are not read */
    const char *sequence; /* the sequence-id column (otc_cli_load_seq_csv) or NULL */
    /* With a header and no features list: the model whose recorded columns
     * (otc_cli_record_columns) are taken by name, whatever their order in the file; NULL
     * takes the columns by position */
    const otc_graph *model;
    const char *model_path;
    bool *had_header; /* out, optional: the file's first line named the columns */
} otc_cli_csv;

/* ---- a model's columns (cli_columns.c) ---- */
/* Records in g's metadata ("columns") the CSV columns it is trained on, and the sequence-id
 * column (NULL: none) a recurrent model read its rows by. */
otc_status otc_cli_record_columns(otc_graph *g, char *const *features, int n_features,
                                  char *const *targets, int n_targets, const char *sequence);
/* The sequence-id column recorded in g when the CSV header (text, its first line) names it
 * (the caller frees it); NULL otherwise. */
char *otc_cli_recorded_sequence(const otc_graph *g, const char *text, size_t len);
/* Matches the header of a CSV (text, its first line) against the columns recorded in g: sets
 * *features to the recorded features as a column list by name (the caller frees it), or NULL
 * when g records none. A recorded feature missing from the header, or a header column that is
 * neither a recorded feature nor target nor the sequence column, is an error naming them
 * (OTC_EXIT_USAGE). */
int otc_cli_match_columns(const char *cmd, const char *path, const char *text, size_t len,
                          const otc_graph *g, const char *model_path, const char *sequence,
                          char **features);

/* ---- "did you mean" (cli_suggest.c) ---- */
/* The name of names[0..n) closest to word by edit distance, when close enough to be a typo
 * (at most a third of its letters, 1 to 3); NULL otherwise. */
const char *otc_cli_closest(const char *word, const char *const *names, int n);
/* Refuses a --task name that is a typo of a built-in task's, suggesting it (OTC_EXIT_USAGE);
 * 0 otherwise (otc_neat_task_create judges the rest). */
int otc_cli_check_task(const char *cmd, const char *spec);

/* Loads a CSV of numbers; errors as for otc_cli_load_model. */
int otc_cli_load_csv(const char *cmd, const char *path, const otc_cli_csv *opt, otc_dataset **out);

/* ---- image data (cli_idx.c) ---- */
/* `--data idx:DIR`: IDX image files in DIR (train-images-idx3-ubyte.gz, ...). */
#define OTC_CLI_IDX_PREFIX "idx:"
/* DIR when data is "idx:DIR", else NULL. */
const char *otc_cli_idx_dir(const char *data);
/* Loads the split ("train" or "t10k") of idx:DIR: each image one row ([1,H,W], pixels /255),
 * the label the one target; checks that the model's one input takes H*W values per sample.
 * Errors as for otc_cli_load_model. */
int otc_cli_load_idx(const char *cmd, const char *data, const char *split, const otc_graph *g,
                     const char *model_path, otc_dataset **out);

/* ---- int8 quantisation (cli_quant.c) ---- */
typedef struct otc_qmodel otc_qmodel;
/* g calibrated on `calibrate` (a CSV, `drop` its columns to leave out, or idx:DIR's train
 * images) and lowered to int8 (otc/quant.h). Errors name the model, the data and the node or
 * column; exit code as otc_cli_error. */
int otc_cli_quantize(const char *cmd, const char *model, otc_graph *g, const char *calibrate,
                     const char *drop, otc_qmodel **out);

/* ---- recurrent models ---- */
/* A recurrent model (otc_graph_is_recurrent) reads its CSV rows as the time steps of
 * sequences rather than independent samples. */

/* Loads a CSV of time steps, rows in time order: with opt->sequence, consecutive rows with
 * the same id are one sequence; without, the file is one. Errors (a missing sequence column,
 * an id coming back, no steps, a cell that is not a finite number) name the file and line. */
int otc_cli_load_seq_csv(const char *cmd, const char *path, const otc_cli_csv *opt,
                         otc_seq_dataset **out);

/* Refuses --sequence/--bptt (named in `option`) on a model without state, saying why. */
int otc_cli_needs_recurrent(const char *cmd, const char *model, const char *option);

/* The refusals of a compiled training step through time (otc compile and otc bench): --bptt K
 * (K >= 1) goes with --train and a recurrent model, and a recurrent model's training step
 * needs it. 0 when the combination is valid, else the error's exit code. */
int otc_cli_check_bptt(const char *cmd, const char *model, bool recurrent, bool train, int bptt);

/* The header guess: true when the first line has no number at all, or has a name where the
 * second line has a number. text need not be NUL-terminated. */
bool otc_cli_csv_has_header(const char *text, size_t len);

/* Writes data atomically to path, or to stdout when path is NULL or "-". Prints the error
 * and returns OTC_EXIT_USAGE on failure, 0 on success. */
int otc_cli_write_output(const char *cmd, const char *path, const void *data, size_t len);

/* One file a command names, with the option that named it ("--input", "MODEL"). */
typedef struct {
    const char *option;
    const char *path; /* NULL or "-" (standard output) when not given */
} otc_cli_file;

/* Refuses (prints "otc CMD: --out and --data name the same file ...", returns OTC_EXIT_USAGE)
 * when an output is the same file as an input or as an earlier output; 0 otherwise. */
int otc_cli_check_files(const char *cmd, const otc_cli_file *in, int n_in, const otc_cli_file *out,
                        int n_out);
/* Before a long run: each output (not standard output) can be written where it goes, tried
 * with an empty temporary beside it (removed at once), as the atomic writer will make one; a
 * device or FIFO is written in place and passes. Else an error naming the option and the
 * reason (OTC_EXIT_USAGE); 0 when all can be. */
int otc_cli_check_writable(const char *cmd, const otc_cli_file *out, int n_out);

/* A one-line progress bar on stderr, drawn only when stderr is a terminal. */
typedef struct {
    bool active;
    int total;
    double started; /* seconds, monotonic */
    char label[48];
} otc_cli_progress;

void otc_cli_progress_start(otc_cli_progress *p, const char *label, int total);
/* done of total steps; status is a short text shown after the bar (may be NULL). */
void otc_cli_progress_update(otc_cli_progress *p, int done, const char *status);
/* Clears the bar's line so the next output starts clean. */
void otc_cli_progress_end(otc_cli_progress *p);
/* Monotonic seconds, for timings shown to the user. */
double otc_cli_seconds(void);

/* The model's one Input that data rows feed: it must be batched and take n_features values
 * per sample. Prints an error naming the model, the data file and the columns otherwise. */
int otc_cli_data_input(const char *cmd, const otc_graph *g, const char *model_path,
                       const char *data_path, const otc_dataset *d, otc_id *input);

/* The per-sample width of a batched node ([B,k] -> k, [B] -> 1); -1 if it is not batched. */
int otc_cli_row_width(const otc_graph *g, otc_id id);

#endif

/* gen_contract_py.c — writes spirefleet/contract.py, the Python side of the
 * label contract, from label/label.h at build time, so the reader cannot
 * drift from the C definitions. Usage: gen_contract_py OUT.py */
#include <stdio.h>

#include "label/label.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: gen_contract_py OUT.py\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "w");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    fprintf(f, "\"\"\"The label contract (generated from label/label.h at build time; do not "
               "edit).\n\n"
               "Values: a won fight scores in [WIN_MIN, 1], a lost one in [0, LOSS_MAX);\n"
               "VALUE_SUPPORT[i] is the value of bin i (bins 0..LOSS_BINS-1 are losses).\n"
               "Forecast columns are FORECAST_COLUMNS, FORECAST_H turns ahead.\n\"\"\"\n\n");
    fprintf(f, "SCHEMA_VERSION = %d\n", SF_LABEL_SCHEMA_VERSION);
    fprintf(f, "\n\ndef schema_note(version):\n"
               "    \"\"\"Why a record of this schema version cannot be read.\"\"\"\n");
    for (unsigned v = 1; v < SF_LABEL_SCHEMA_VERSION; v++)
        fprintf(f, "    if version == %u:\n        return \"%s\"\n", v, sf_label_schema_note(v));
    fprintf(f, "    if version > SCHEMA_VERSION:\n        return \"%s\"\n",
            sf_label_schema_note(SF_LABEL_SCHEMA_VERSION + 1));
    fprintf(f, "    return \"%s\"\n\n\n", sf_label_schema_note(0));
    fprintf(f, "VALUE_BINS = %d\n", SF_VALUE_BINS);
    fprintf(f, "VALUE_LOSS_BINS = %d\n", SF_VALUE_LOSS_BINS);
    fprintf(f, "VALUE_LOSS_MAX = %.17g\n", SF_VALUE_LOSS_MAX);
    fprintf(f, "VALUE_WIN_MIN = %.17g\n", SF_VALUE_WIN_MIN);
    fprintf(f, "VALUE_SUPPORT = (");
    for (int i = 0; i < SF_VALUE_BINS; i++)
        fprintf(f, "%s%.17g", i ? ", " : "", sf_value_support(i));
    fprintf(f, ")\n");
    fprintf(f, "FORECAST_H = %d\n", SF_FORECAST_H);
    fprintf(f, "FORECAST_COLUMNS = (");
    for (int c = 0; c < SF_FORECAST_COLS; c++)
        fprintf(f, "%s\"%s\"", c ? ", " : "", sf_forecast_column_name(c));
    fprintf(f, ")\n");
    if (fclose(f) != 0) {
        perror(argv[1]);
        return 1;
    }
    return 0;
}

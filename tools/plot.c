/* A small SVG line plot: bus bandwidth against message size (log scale). */
#include "config.h"
#include "perf.h"

#include <math.h>
#include <stdio.h>

int perf_plot_svg(const char *path, const char *title, const perf_series_t *series, int nseries)
{
    static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e"};
    const double W = 720, H = 420, L = 70, R = 20, T = 40, B = 50;
    double xmin = 1e300, xmax = 0, ymax = 0;
    int total = 0;
    FILE *f;
    for (int s = 0; s < nseries; s++)
        for (int i = 0; i < series[s].n; i++, total++) {
            const perf_point_t *pt = &series[s].pts[i];
            double x = pt->bytes > 0 ? (double)pt->bytes : 1;
            xmin = x < xmin ? x : xmin;
            xmax = x > xmax ? x : xmax;
            ymax = pt->busbw > ymax ? pt->busbw : ymax;
        }
    if (total == 0 || !(f = fopen(path, "w")))
        return -1;
    if (xmax <= xmin)
        xmax = xmin * 2;
    if (ymax <= 0)
        ymax = 1;
    ymax *= 1.1;
#define PX(x) (L + (log2(x) - log2(xmin)) / (log2(xmax) - log2(xmin)) * (W - L - R))
#define PY(y) (H - B - (y) / ymax * (H - T - B))
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H);
    fprintf(f, "<text x=\"%g\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">%s</text>\n", W / 2, title);
    fprintf(f, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"black\"/>\n", L, H - B, W - R, H - B);
    fprintf(f, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"black\"/>\n", L, T, L, H - B);
    for (double x = xmin; x <= xmax * 1.0001; x *= 4) {
        const char *unit = x >= (1 << 30) ? "G" : x >= (1 << 20) ? "M" : x >= 1024 ? "K" : "";
        double v = x >= (1 << 30) ? x / (1 << 30) : x >= (1 << 20) ? x / (1 << 20) : x >= 1024 ? x / 1024 : x;
        fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%g%s</text>\n", PX(x), H - B + 16, v, unit);
    }
    for (int k = 0; k <= 5; k++) {
        double y = ymax * k / 5;
        fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%.3g</text>\n", L - 6, PY(y) + 4, y);
        fprintf(f, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#ddd\"/>\n", L, PY(y), W - R, PY(y));
    }
    fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">message size (bytes)</text>\n", (L + W - R) / 2, H - 12);
    fprintf(f, "<text x=\"16\" y=\"%g\" transform=\"rotate(-90 16 %g)\" text-anchor=\"middle\">bus bandwidth (GB/s)</text>\n",
            (T + H - B) / 2, (T + H - B) / 2);
    for (int s = 0; s < nseries; s++) {
        const char *color = colors[s % 4];
        const perf_point_t *pts = series[s].pts;
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color);
        for (int i = 0; i < series[s].n; i++)
            fprintf(f, "%.1f,%.1f ", PX(pts[i].bytes > 0 ? (double)pts[i].bytes : 1), PY(pts[i].busbw));
        fprintf(f, "\"/>\n");
        for (int i = 0; i < series[s].n; i++)
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                    PX(pts[i].bytes > 0 ? (double)pts[i].bytes : 1), PY(pts[i].busbw), color);
        fprintf(f, "<text x=\"%g\" y=\"%g\" fill=\"%s\">%s</text>\n", L + 10, T + 14 + 16 * s, color,
                series[s].name);
    }
    fprintf(f, "</svg>\n");
#undef PX
#undef PY
    return fclose(f) == 0 ? 0 : -1;
}

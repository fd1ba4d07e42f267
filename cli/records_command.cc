// `ablate records`: the speedrun's published record history, and this cluster's own runs of the
// record presets beside the published times (ListRecords), as tables, CSV or JSON.
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/csv.h"
#include "cli/table.h"

namespace ablate {
namespace {

// Minutes as the README writes them: up to 3 decimals, trailing zeros dropped ("45", "2.992").
std::string Minutes(double ms) {
  std::string text = FormatDouble(ms / 60000.0, 3);
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') text.pop_back();
  return text;
}

void PrintRecords(const v1::ListRecordsResponse& r) {
  Table t({"#", "DATE", "TIME (min)", "STEPS", "MS/STEP", "PRESET", "CHANGE"});
  for (const v1::RecordRow& row : r.records()) {
    const v1::Record& rec = row.record();
    t.AddRow({rec.id(), rec.date(), Minutes(rec.record_time_ms()),
              rec.has_steps() ? std::to_string(rec.steps()) : "-",
              rec.has_ms_per_step() ? FormatDouble(rec.ms_per_step(), 1) : "-",
              rec.preset().empty() ? "-" : rec.preset(), rec.description()});
  }
  t.Print(std::cout);
}

std::string Seconds(bool has, double ms) { return has ? FormatDouble(ms / 1000.0, 2) : "-"; }

std::vector<std::string> OwnRow(const v1::Record& rec, const v1::OwnRecordRuns& own) {
  // A script baseline's runs of the record (issue 14) say so in the preset column.
  return {rec.id(),
          own.script() ? "(script)" : rec.preset(),
          Seconds(true, rec.record_time_ms()),
          own.scale(),
          own.hardware(),
          std::to_string(own.n()),
          std::to_string(own.n_reached()) + "/" + std::to_string(own.n()),
          Seconds(own.has_mean_time_to_target_ms(), own.mean_time_to_target_ms()),
          own.has_mean_final_val_loss() ? FormatDouble(own.mean_final_val_loss(), 4) : "-"};
}

// Own runs in two sections: like for like with the published record (full scale, FineWeb, 3.28,
// 8 GPUs of one model), with the ratio; and the rest, with why they are not comparable and no
// ratio (a tiny CPU run is not 0.11x a speedrun record).
void PrintOwnRuns(const v1::ListRecordsResponse& r) {
  Table like({"#", "PRESET", "PUBLISHED (s)", "SCALE", "HARDWARE", "RUNS", "REACHED",
              "TIME TO TARGET (s)", "VAL LOSS (nats)", "× PUBLISHED"});
  Table other({"#", "PRESET", "PUBLISHED (s)", "SCALE", "HARDWARE", "RUNS", "REACHED",
               "TIME TO TARGET (s)", "VAL LOSS (nats)", "NOT LIKE THE RECORD"});
  for (const v1::RecordRow& row : r.records()) {
    for (const v1::OwnRecordRuns& own : row.own_runs()) {
      std::vector<std::string> cells = OwnRow(row.record(), own);
      if (own.like_for_like()) {
        cells.push_back(own.has_ratio_to_published()
                            ? FormatDouble(own.ratio_to_published(), 3)
                            : "-");
        like.AddRow(cells);
      } else {
        cells.push_back(own.not_comparable());
        other.AddRow(cells);
      }
    }
  }
  if (like.empty() && other.empty()) {
    std::cout << "\nThis cluster's runs of the record presets: none yet; submit a sweep whose "
                 "baseline is a preset, e.g. baseline: {preset: r20-sub3min, scale: tiny}\n";
    return;
  }
  std::cout << "\nThis cluster's runs of the record presets, like for like (full scale, FineWeb, "
               "target 3.28, 8 GPUs of one model; succeeded runs of the unchanged preset):\n";
  if (like.empty()) {
    std::cout << "none\n";
  } else {
    like.Print(std::cout);
    std::cout << "TIME TO TARGET is the mean over the runs that reached 3.28 (runs that never "
                 "reached it are in RUNS, not in the mean); × PUBLISHED is that mean / the "
                 "published record time.\n";
  }
  if (!other.empty()) {
    std::cout << "\nOther runs of the record presets (other scale, data or hardware: not "
                 "comparable with the published times, so no ratio):\n";
    other.Print(std::cout);
  }
}

constexpr const char* kRecordsCsvHeader =
    "id,number,date,record_time_ms,steps,ms_per_step,description,source,preset,"
    "own_scale,own_hardware,own_n,own_n_reached,own_mean_time_to_target_ms,"
    "own_mean_final_val_loss,own_ratio_to_published,own_dataset,own_like_for_like,"
    "own_not_comparable\n";

std::vector<std::string> RecordCells(const v1::Record& rec) {
  return {CsvText(rec.id()),
          std::to_string(rec.number()),
          rec.date(),
          CsvNumber(rec.record_time_ms()),
          rec.has_steps() ? std::to_string(rec.steps()) : "",
          CsvNumber(rec.has_ms_per_step(), rec.ms_per_step()),
          CsvText(rec.description()),
          CsvText(rec.source()),
          CsvText(rec.preset())};
}

std::vector<std::string> OwnCells(const v1::OwnRecordRuns& own) {
  return {CsvText(own.scale()),
          CsvText(own.hardware()),
          std::to_string(own.n()),
          std::to_string(own.n_reached()),
          CsvNumber(own.has_mean_time_to_target_ms(), own.mean_time_to_target_ms()),
          CsvNumber(own.has_mean_final_val_loss(), own.mean_final_val_loss()),
          CsvNumber(own.has_ratio_to_published(), own.ratio_to_published()),
          CsvText(own.dataset()),
          own.like_for_like() ? "true" : "false",
          CsvText(own.not_comparable())};
}

// One line per record, and one more per group of own runs (record columns repeated).
void PrintCsv(const v1::ListRecordsResponse& r) {
  std::cout << kRecordsCsvHeader;
  for (const v1::RecordRow& row : r.records()) {
    const std::vector<std::string> record = RecordCells(row.record());
    if (row.own_runs().empty()) {
      std::vector<std::string> cells = record;
      cells.resize(record.size() + OwnCells({}).size());
      std::cout << CsvLine(cells);
    }
    for (const v1::OwnRecordRuns& own : row.own_runs()) {
      std::vector<std::string> cells = record;
      const std::vector<std::string> more = OwnCells(own);
      cells.insert(cells.end(), more.begin(), more.end());
      std::cout << CsvLine(cells);
    }
  }
}

}  // namespace

int RecordsCommand(Client& c, bool csv) {
  if (csv && c.json()) {
    std::cerr << "ablate: --csv and --json cannot be combined; pick one\n";
    return kExitUsage;
  }
  v1::ListRecordsResponse resp;
  if (std::optional<int> done = c.Call(&Client::Stub::ListRecords, v1::ListRecordsRequest(), &resp,
                                      "listing records")) {
    return *done;
  }
  if (csv) {
    PrintCsv(resp);
  } else {
    PrintRecords(resp);
    PrintOwnRuns(resp);
  }
  return kExitOk;
}

}  // namespace ablate
